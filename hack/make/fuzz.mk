##@ Fuzzing

# Each fuzz target runs for FUZZTIME (CI uses a short fixed time; run longer
# by hand, e.g. make fuzz FUZZTIME=10m); make test runs every seed corpus as
# ordinary tests. A failing input is written
# to the package's testdata/fuzz/<target>/ and replayed by every go test; a
# run that stops without one (the engine missing its own deadline on a busy
# machine) is made once more.
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
	@set -e; log=$$(mktemp); trap 'rm -f "$$log"' EXIT; \
	for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "fuzz $$pkg $$name for $(FUZZTIME)"; \
		rc=0; go test $$pkg -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) >"$$log" 2>&1 || rc=$$?; \
		cat "$$log"; \
		if [ $$rc -ne 0 ]; then \
			grep -q 'Failing input written' "$$log" && exit 1; \
			echo "fuzz $$name: the fuzzing engine stopped without a failing input (on a busy machine it can miss its own deadline); running it once more"; \
			go test $$pkg -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME); \
		fi; \
	done
