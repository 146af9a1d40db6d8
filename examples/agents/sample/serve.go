/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package sample

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// Serve prints "NAME listening on http://ADDR", the line demos wait for,
// then serves h until ctx ends and shuts down gracefully.
func Serve(ctx context.Context, addr, name string, h http.Handler, log *slog.Logger) error {
	log = logger(log)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		log.Info("shutting down")
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(shutdown)
	}()
	fmt.Printf("%s listening on http://%s\n", name, ln.Addr())
	if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
