# bulksend — see README.md. `make test` is what CI runs.
GO      ?= go
GOFMT   ?= gofmt
BIN     ?= bulksend
DEMO    ?= demo

.PHONY: build test lint test-short demo bench fuzz vet clean

build:
	$(GO) build -o $(BIN) ./cmd/bulksend

# The test command: README.md and .ci/run use exactly this.
test: lint
	$(GO) test -race -count=1 ./...

# gofmt, go vet and staticcheck (pinned by go.mod's tool line).
lint:
	@unformatted="$$($(GOFMT) -l .)"; if [ -n "$$unformatted" ]; then \
		echo "gofmt: these files need gofmt -w:" >&2; echo "$$unformatted" >&2; exit 1; fi
	$(GO) vet ./...
	$(GO) tool staticcheck ./...

test-short:
	$(GO) test -short ./...

# A real campaign end to end against the built-in sandbox: import, send,
# reconcile the webhook log, report. No Meta account needed.
demo: build
	@rm -rf $(DEMO) && mkdir -p $(DEMO) && cp testdata/demo/campaign.csv $(DEMO)/campaign.csv
	@echo "== 1. send spring_sale (image header, URL button) to 2,005 rows, 2 sender numbers at 80 msg/s each, to the in-process sandbox"
	-./$(BIN) run $(DEMO)/campaign.csv --sandbox --template spring_sale --param header.image=https://cdn.example.com/spring.jpg --from 106540352242922,106540352242923
	@echo "== 2. reconcile the sandbox's webhook log: rows in doubt are settled, delivered/read recorded"
	-./$(BIN) reconcile $(DEMO)/campaign.csv $(DEMO)/campaign.webhooks.jsonl --unmatched resend --grace 0s
	@echo "== 3. resume: sends what no webhook showed was sent, and due retries"
	-./$(BIN) run $(DEMO)/campaign.csv --sandbox
	-./$(BIN) reconcile $(DEMO)/campaign.csv $(DEMO)/campaign.webhooks.jsonl
	@echo "== 4. report"
	./$(BIN) status $(DEMO)/campaign.csv --rate-card testdata/demo/rate-card.csv --calling-codes testdata/demo/calling-codes.csv
	./$(BIN) export $(DEMO)/campaign.csv -o $(DEMO)/report.csv
	@echo "report: $(DEMO)/report.csv"
	@cp testdata/demo/sms.csv $(DEMO)/sms.csv
	@echo "== 5. SMS: 402 rows over 4 origination numbers at 10 parts/s each, opt-out lists read first, to the in-process AWS End User Messaging sandbox"
	./$(BIN) run $(DEMO)/sms.csv --channel sms --sandbox --from +12065550100,+12065550101,+12065550102,+12065550103 --rate 10 \
		--text-file testdata/demo/sms-text.txt --message-type promotional --ttl 4h --sync-opt-outs --dry-run
	-./$(BIN) run $(DEMO)/sms.csv --channel sms --sandbox --from +12065550100,+12065550101,+12065550102,+12065550103 --rate 10 \
		--text-file testdata/demo/sms-text.txt --message-type promotional --ttl 4h --sync-opt-outs
	@echo "== 6. reconcile the sandbox's SMS event records (delivered, failed, parts and price billed), then resume"
	-./$(BIN) reconcile $(DEMO)/sms.csv $(DEMO)/sms.sms-events.jsonl --unmatched resend --grace 0s
	-./$(BIN) run $(DEMO)/sms.csv --sandbox --sync-opt-outs
	-./$(BIN) reconcile $(DEMO)/sms.csv $(DEMO)/sms.sms-events.jsonl
	./$(BIN) status $(DEMO)/sms.csv
	./$(BIN) export $(DEMO)/sms.csv -o $(DEMO)/sms-report.csv
	@echo "report: $(DEMO)/sms-report.csv"

# The figures the issues ask for, printed side by side with their targets.
# BULKSEND_BENCH_ROWS=100000 makes the import and 1M-row run quicker;
# BenchmarkSMSPacing sends in real time for about 80 s.
bench:
	$(GO) test -run '^$$' -bench . -benchtime 1x -timeout 30m ./internal/bench
	$(GO) test -run '^$$' -bench 'Sandbox$$' -benchtime 3s ./internal/sandbox
	$(GO) test -run '^$$' -bench 'Reconcile$$' -benchtime 20x ./internal/reconcile

# Every parser of outside input has a fuzz target; FUZZTIME each.
FUZZTIME ?= 30s
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzReader$$' -fuzztime $(FUZZTIME) ./internal/csvin
	$(GO) test -run '^$$' -fuzz '^FuzzNormalize$$' -fuzztime $(FUZZTIME) ./internal/csvin
	$(GO) test -run '^$$' -fuzz '^FuzzListReader$$' -fuzztime $(FUZZTIME) ./internal/csvin
	$(GO) test -run '^$$' -fuzz '^FuzzReader$$' -fuzztime $(FUZZTIME) ./internal/webhook
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./internal/webhook
	$(GO) test -run '^$$' -fuzz '^FuzzSend$$' -fuzztime $(FUZZTIME) ./internal/sandbox
	$(GO) test -run '^$$' -fuzz '^FuzzSendDefinition$$' -fuzztime $(FUZZTIME) ./internal/sandbox
	$(GO) test -run '^$$' -fuzz '^FuzzListTemplates$$' -fuzztime $(FUZZTIME) ./internal/sandbox
	$(GO) test -run '^$$' -fuzz '^FuzzSendMarketing$$' -fuzztime $(FUZZTIME) ./internal/sandbox
	$(GO) test -run '^$$' -fuzz '^FuzzNumberFields$$' -fuzztime $(FUZZTIME) ./internal/sandbox
	$(GO) test -run '^$$' -fuzz '^FuzzParseDefinitions$$' -fuzztime $(FUZZTIME) ./internal/template
	$(GO) test -run '^$$' -fuzz '^FuzzValidate$$' -fuzztime $(FUZZTIME) ./internal/template
	$(GO) test -run '^$$' -fuzz '^FuzzLoad$$' -fuzztime $(FUZZTIME) ./internal/pricing
	$(GO) test -run '^$$' -fuzz '^FuzzPrice$$' -fuzztime $(FUZZTIME) ./internal/pricing
	$(GO) test -run '^$$' -fuzz '^FuzzParseUsage$$' -fuzztime $(FUZZTIME) ./internal/whatsapp
	$(GO) test -run '^$$' -fuzz '^FuzzMeasure$$' -fuzztime $(FUZZTIME) ./internal/segment
	$(GO) test -run '^$$' -fuzz '^FuzzText$$' -fuzztime $(FUZZTIME) ./internal/smstext
	$(GO) test -run '^$$' -fuzz '^FuzzSendTextMessage$$' -fuzztime $(FUZZTIME) ./internal/smssandbox
	$(GO) test -run '^$$' -fuzz '^FuzzReader$$' -fuzztime $(FUZZTIME) ./internal/smsevent
	$(GO) test -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $(FUZZTIME) ./internal/smsevent

vet:
	$(GO) vet ./...

clean:
	rm -rf $(BIN) $(DEMO) dist
