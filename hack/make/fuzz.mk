##@ Fuzzing

# Each fuzz target runs for FUZZTIME (make test uses a short fixed time; run
# longer by hand, e.g. make fuzz FUZZTIME=10m). A failing input is written
# to the package's testdata/fuzz/<target>/ and replayed by every go test.
FUZZTIME ?= 30s
FUZZ_TARGETS := \
	./internal/a2a:FuzzCardParsing \
	./internal/a2a:FuzzTaskDecoding \
	./internal/a2a:FuzzMetadataDecoding \
	./internal/a2a:FuzzClassify \
	./internal/delegation:FuzzLedger \
	./pkg/agentkit:FuzzExtensionRequests

.PHONY: fuzz
fuzz: ## Run every Go fuzz target for FUZZTIME each (default 30s).
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "fuzz $$pkg $$name for $(FUZZTIME)"; \
		go test $$pkg -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME); \
	done
