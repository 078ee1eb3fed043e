# bulksend — see README.md. `make test` is what CI runs.
GO      ?= go
GOFMT   ?= gofmt
BIN     ?= bulksend
DEMO    ?= demo
SHOT    ?= report-shot
CHROMIUM ?= $(shell command -v chromium || command -v chromium-browser)

.PHONY: build test lint test-short demo report-screenshot bench fuzz vet clean release-snapshot

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
	./$(BIN) report $(DEMO)/campaign.csv -o $(DEMO)/report.html
	@echo "report: $(DEMO)/report.csv, $(DEMO)/report.html"
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
	./$(BIN) report $(DEMO)/sms.csv -o $(DEMO)/sms-report.html
	@echo "report: $(DEMO)/sms-report.csv, $(DEMO)/sms-report.html"

# The report of a 20,000-row campaign against the in-process sandbox, with
# throttling (6 numbers at 100 msg/s where the sandbox allows 80; the resumes
# at 80), transient and permanent errors, a run killed (-9) and a run
# interrupted, their resumes, and reconciles of the webhook log; rendered by headless Chromium (Debian's
# chromium package) into $(SHOT)/report.png. Without Chromium it writes the
# HTML and JSON and says it skipped the screenshot. A test then checks the
# page's figures against the checkpoint. About 80 s.
SHOT_ROWS ?= 20000
SHOT_FROM ?= 1000001,1000002,1000003,1000004,1000005,1000006
report-screenshot: build
	@start=$$(date +%s); rm -rf $(SHOT) && mkdir -p $(SHOT) && \
	awk -v n=$(SHOT_ROWS) 'BEGIN { print "phone,name,code"; \
		for (i = 0; i < n; i++) { p = sprintf("+4474%08d", i); \
			if (i % 997 == 13) p = "12345"; if (i % 1499 == 7) p = sprintf("+4474%08d", i - 1); \
			printf "%s,Name %d,C%d\n", p, i, i } }' > $(SHOT)/campaign.csv && \
	echo "== run 1: $(SHOT_ROWS) rows, 6 numbers at 100 msg/s; killed (-9) after 10 s" && \
	{ timeout --preserve-status -s KILL 10 ./$(BIN) run $(SHOT)/campaign.csv --sandbox --template welcome --from $(SHOT_FROM) --rate 100 --progress-interval 5s 2>$(SHOT)/run1.log; \
	  echo "exit $$?"; } && \
	echo "== run 2: resume at 80 msg/s, the sandbox's limit; interrupted after 10 s" && \
	{ timeout --foreground --preserve-status -s INT 10 ./$(BIN) run $(SHOT)/campaign.csv --sandbox --rate 80 2>$(SHOT)/run2.log; echo "exit $$?"; } && \
	echo "== run 3: resume to the end (rows the kill left in doubt are held)" && \
	{ ./$(BIN) run $(SHOT)/campaign.csv --sandbox 2>$(SHOT)/run3.log; echo "exit $$?"; } && \
	echo "== reconcile the webhook log: settle the rows in doubt, resend those no webhook shows sent" && \
	{ ./$(BIN) reconcile $(SHOT)/campaign.csv $(SHOT)/campaign.webhooks.jsonl --unmatched resend --grace 0s 2>$(SHOT)/reconcile1.log; echo "exit $$?"; } && \
	echo "== run 4: send what reconcile made pending again" && \
	{ ./$(BIN) run $(SHOT)/campaign.csv --sandbox 2>$(SHOT)/run4.log; echo "exit $$?"; } && \
	{ ./$(BIN) reconcile $(SHOT)/campaign.csv $(SHOT)/campaign.webhooks.jsonl 2>$(SHOT)/reconcile2.log; echo "exit $$?"; } && \
	./$(BIN) report $(SHOT)/campaign.csv -o $(SHOT)/report.html --json > $(SHOT)/report.json && \
	echo "report: $(SHOT)/report.html ($(SHOT)/report.json)" && \
	echo "== check the page's figures against the checkpoint" && \
	BULKSEND_REPORT_HTML=$(abspath $(SHOT))/report.html BULKSEND_REPORT_DB=$(abspath $(SHOT))/campaign.bulksend.db \
		$(GO) test -count=1 -run '^TestReportFileMatchesCheckpoint$$' ./internal/report && \
	if [ -n "$(CHROMIUM)" ]; then \
		profile=$$(mktemp -d) && \
		"$(CHROMIUM)" --headless --no-sandbox --disable-gpu --disable-background-networking --disable-component-update \
			--disable-sync --no-first-run --user-data-dir=$$profile --hide-scrollbars --window-size=1400,6400 \
			--screenshot=$(SHOT)/report.png "file://$(abspath $(SHOT))/report.html" 2>$(SHOT)/chromium.log; rc=$$?; rm -rf $$profile; \
		[ $$rc -eq 0 ] && [ -s $(SHOT)/report.png ] || { echo "chromium failed (exit $$rc): see $(SHOT)/chromium.log" >&2; exit 1; }; \
		echo "screenshot: $(SHOT)/report.png"; \
	else echo "report-screenshot: no chromium on PATH (apt-get install chromium): skipped the screenshot"; fi; \
	echo "report-screenshot: $$(( $$(date +%s) - start )) s"

# The figures the issues ask for, printed side by side with their targets.
# BULKSEND_BENCH_ROWS=100000 makes the import and 1M-row run quicker (and
# sets the rows of BenchmarkReport, 200,000 by default);
# BenchmarkSMSPacing sends in real time for about 80 s.
# The figures the issues ask for, each printed beside its target and its
# reference measured in the same run (internal/bench: pacing, learning a
# number's limit, retry tail, 10 numbers × 1,000/s, import, overhead, SMS;
# three processes sharing numbers through --budget, and a booking's cost,
# with redis-server installed;
# bulksend receive's signed POSTs/s and p99);
# several minutes (the retry-tail campaign alone is 200 s). BULKSEND_BENCH_ROWS=N shrinks the import, retry-tail and
# scale campaigns for a quick look.
bench:
	$(GO) test -run '^$$' -bench . -benchtime 1x -timeout 60m ./internal/bench
	$(GO) test -run '^$$' -bench 'Sandbox$$' -benchtime 3s ./internal/whatsapp/sandbox
	$(GO) test -run '^$$' -bench 'Reconcile$$' -benchtime 20x ./internal/reconcile
	$(GO) test -run '^$$' -bench 'Report$$' -benchtime 1x ./internal/report
	$(GO) test -run '^$$' -bench 'Receive$$' -benchtime 1x ./internal/whatsapp/receive

# Every parser of outside input has a fuzz target; FUZZTIME each.
FUZZTIME ?= 30s
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzReader$$' -fuzztime $(FUZZTIME) ./internal/csvin
	$(GO) test -run '^$$' -fuzz '^FuzzNormalize$$' -fuzztime $(FUZZTIME) ./internal/csvin
	$(GO) test -run '^$$' -fuzz '^FuzzListReader$$' -fuzztime $(FUZZTIME) ./internal/csvin
	$(GO) test -run '^$$' -fuzz '^FuzzReader$$' -fuzztime $(FUZZTIME) ./internal/whatsapp/webhook
	$(GO) test -run '^$$' -fuzz '^FuzzClassify$$' -fuzztime $(FUZZTIME) ./internal/optout
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./internal/whatsapp/webhook
	$(GO) test -run '^$$' -fuzz '^FuzzSend$$' -fuzztime $(FUZZTIME) ./internal/whatsapp/sandbox
	$(GO) test -run '^$$' -fuzz '^FuzzSendDefinition$$' -fuzztime $(FUZZTIME) ./internal/whatsapp/sandbox
	$(GO) test -run '^$$' -fuzz '^FuzzListTemplates$$' -fuzztime $(FUZZTIME) ./internal/whatsapp/sandbox
	$(GO) test -run '^$$' -fuzz '^FuzzSendMarketing$$' -fuzztime $(FUZZTIME) ./internal/whatsapp/sandbox
	$(GO) test -run '^$$' -fuzz '^FuzzNumberFields$$' -fuzztime $(FUZZTIME) ./internal/whatsapp/sandbox
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeSend$$' -fuzztime $(FUZZTIME) ./internal/whatsapp/sandbox
	$(GO) test -run '^$$' -fuzz '^FuzzAcceptedRecord$$' -fuzztime $(FUZZTIME) ./internal/whatsapp/sandbox
	$(GO) test -run '^$$' -fuzz '^FuzzParseDefinitions$$' -fuzztime $(FUZZTIME) ./internal/whatsapp/template
	$(GO) test -run '^$$' -fuzz '^FuzzValidate$$' -fuzztime $(FUZZTIME) ./internal/whatsapp/template
	$(GO) test -run '^$$' -fuzz '^FuzzLoad$$' -fuzztime $(FUZZTIME) ./internal/whatsapp/pricing
	$(GO) test -run '^$$' -fuzz '^FuzzPrice$$' -fuzztime $(FUZZTIME) ./internal/whatsapp/pricing
	$(GO) test -run '^$$' -fuzz '^FuzzParseUsage$$' -fuzztime $(FUZZTIME) ./internal/whatsapp
	$(GO) test -run '^$$' -fuzz '^FuzzMeasure$$' -fuzztime $(FUZZTIME) ./internal/sms/segment
	$(GO) test -run '^$$' -fuzz '^FuzzText$$' -fuzztime $(FUZZTIME) ./internal/sms/smstext
	$(GO) test -run '^$$' -fuzz '^FuzzSendTextMessage$$' -fuzztime $(FUZZTIME) ./internal/sms/smssandbox
	$(GO) test -run '^$$' -fuzz '^FuzzReader$$' -fuzztime $(FUZZTIME) ./internal/sms/smsevent
	$(GO) test -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $(FUZZTIME) ./internal/sms/smsevent
	$(GO) test -run '^$$' -fuzz '^FuzzLimiter$$' -fuzztime $(FUZZTIME) ./internal/csvin
	$(GO) test -run '^$$' -fuzz '^FuzzScanner$$' -fuzztime $(FUZZTIME) ./internal/sms/smsevent
	$(GO) test -run '^$$' -fuzz '^FuzzPrefix$$' -fuzztime $(FUZZTIME) ./internal/sms/smsevent
	$(GO) test -run '^$$' -fuzz '^FuzzParseInbound$$' -fuzztime $(FUZZTIME) ./internal/sms/smsevent
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./internal/sms/snsverify
	$(GO) test -run '^$$' -fuzz '^FuzzCheckCertURL$$' -fuzztime $(FUZZTIME) ./internal/sms/snsverify
	$(GO) test -run '^$$' -fuzz '^FuzzCheckIdentity$$' -fuzztime $(FUZZTIME) ./internal/sms
	$(GO) test -run '^$$' -fuzz '^FuzzCheckSender$$' -fuzztime $(FUZZTIME) ./internal/whatsapp
	$(GO) test -run '^$$' -fuzz '^FuzzEscape$$' -fuzztime $(FUZZTIME) ./internal/termtext
	$(GO) test -run '^$$' -fuzz '^FuzzNeutralize$$' -fuzztime $(FUZZTIME) ./internal/csvout
	$(GO) test -run '^$$' -fuzz '^FuzzParseWindow$$' -fuzztime $(FUZZTIME) ./internal/schedule
	$(GO) test -run '^$$' -fuzz '^FuzzParseSendAt$$' -fuzztime $(FUZZTIME) ./internal/schedule
	$(GO) test -run '^$$' -fuzz '^FuzzZonesOf$$' -fuzztime $(FUZZTIME) ./internal/schedule
	$(GO) test -run '^$$' -fuzz '^FuzzParseSignature$$' -fuzztime $(FUZZTIME) ./internal/whatsapp/receive
	$(GO) test -run '^$$' -fuzz '^FuzzParseName$$' -fuzztime $(FUZZTIME) ./internal/whatsapp/receive

vet:
	$(GO) vet ./...

clean:
	rm -rf $(BIN) $(DEMO) $(SHOT) dist

# The linux release archives, built as the release workflow builds them
# (goreleaser release --snapshot --clean with .goreleaser.yaml: amd64 with
# gcc, arm64 with Debian's cross compiler; darwin is the macOS runner's job),
# then a smoke run of each archive's binary: --version (the stamped version)
# and a 20-row campaign to the in-process sandbox, the arm64 one under
# qemu-user (it must end with exit 0, or 3 when all that is left is a row
# the sandbox's late answers put in doubt). Installs gcc-aarch64-linux-gnu and qemu-user when missing (as
# root), and goreleaser into .tools/ (as a go.mod tool it would add some 300
# requires to go.mod). The first cgo cross build of SQLite takes minutes.
GORELEASER_VERSION ?= v2.15.1
GORELEASER ?= $(CURDIR)/.tools/$(GORELEASER_VERSION)/goreleaser
release-snapshot:
	@start=$$(date +%s); set -e; \
	if ! command -v aarch64-linux-gnu-gcc >/dev/null || ! command -v qemu-aarch64 >/dev/null; then \
		if [ "$$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then \
			echo "release-snapshot: needs aarch64-linux-gnu-gcc and qemu-aarch64: apt-get install gcc-aarch64-linux-gnu qemu-user (as root)" >&2; exit 1; fi; \
		echo "== apt-get install gcc-aarch64-linux-gnu qemu-user"; \
		export DEBIAN_FRONTEND=noninteractive; \
		apt-get install -y -q gcc-aarch64-linux-gnu qemu-user >/dev/null || \
			{ apt-get update -q >/dev/null && apt-get install -y -q gcc-aarch64-linux-gnu qemu-user >/dev/null; }; \
	fi; \
	if ! command -v "$(GORELEASER)" >/dev/null; then \
		echo "== go install github.com/goreleaser/goreleaser/v2@$(GORELEASER_VERSION) into $(dir $(GORELEASER))"; \
		GOBIN=$(dir $(GORELEASER)) $(GO) install github.com/goreleaser/goreleaser/v2@$(GORELEASER_VERSION); fi; \
	echo "== goreleaser release --snapshot --clean (linux amd64, arm64)"; \
	"$(GORELEASER)" release --snapshot --clean; \
	ls dist/*.tar.gz dist/checksums.txt; (cd dist && sha256sum -c checksums.txt); \
	tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	awk 'BEGIN { print "phone,name"; for (i = 0; i < 20; i++) printf "+4474%08d,Name %d\n", i, i }' > $$tmp/x.csv; \
	for arch in amd64 arm64; do \
		archive=$$(ls dist/bulksend_*_linux_$$arch.tar.gz); \
		version=v$$(basename $$archive .tar.gz | sed 's/^bulksend_//; s/_linux_.*//'); \
		echo "== $$archive"; tar tzf $$archive; \
		mkdir $$tmp/$$arch && tar xzf $$archive -C $$tmp/$$arch && cp $$tmp/x.csv $$tmp/$$arch/; \
		runner=; [ $$arch = arm64 ] && runner="qemu-aarch64 -L /usr/aarch64-linux-gnu"; \
		echo "== $$runner bulksend --version"; \
		out=$$(cd $$tmp/$$arch && $$runner ./bulksend --version); echo "$$out"; \
		case "$$out" in "bulksend $$version"*) ;; *) echo "release-snapshot: want version $$version" >&2; exit 1;; esac; \
		echo "== $$runner bulksend run x.csv --sandbox --template welcome --from 1000001 --rate 50"; \
		rc=0; (cd $$tmp/$$arch && $$runner ./bulksend run x.csv --sandbox --template welcome --from 1000001 --rate 50 2>run.log) || rc=$$?; \
		grep -E 'this run:|campaign: 20 rows' $$tmp/$$arch/run.log || true; \
		if [ $$rc -ne 0 ] && ! { [ $$rc -eq 3 ] && grep -q 'campaign: 20 rows = .* + 0 pending + 0 sending + [1-9]' $$tmp/$$arch/run.log; }; then \
			cat $$tmp/$$arch/run.log >&2; echo "release-snapshot: the $$arch sandbox campaign failed (exit $$rc)" >&2; exit 1; fi; \
	done; \
	echo "release-snapshot: $$(( $$(date +%s) - start )) s"
