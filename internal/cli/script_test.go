package cli

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/csvin"
	"github.com/bulksend/bulksend/internal/store"
	wachannel "github.com/bulksend/bulksend/internal/whatsapp/channel"
	"github.com/bulksend/bulksend/internal/whatsapp/sandbox"
)

// TestMain lets the test binary act as bulksend: for testscript's exec,
// and for the crash tests that run it as a child process and kill it.
func TestMain(m *testing.M) {
	if os.Getenv("BULKSEND_TEST_MAIN") == "1" {
		testClock()
		testSandbox()
		testSNS()
		os.Exit(Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	if os.Getenv("BULKSEND_LEDGER") == "" {
		// Never the user's own ledger: the runs these tests start (and the
		// processes they start) share one of their own.
		dir, err := os.MkdirTemp("", "bulksend-cli-test-")
		if err != nil {
			panic(err)
		}
		defer os.RemoveAll(dir)
		os.Setenv("BULKSEND_LEDGER", filepath.Join(dir, "ledger.db"))
	}
	testscript.Main(m, map[string]func(){
		"bulksend": func() {
			testClock()
			testSandbox()
			testSNS()
			code := Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
			if f := os.Getenv("BULKSEND_TEST_EXITFILE"); f != "" {
				os.WriteFile(f, []byte(strconv.Itoa(code)), 0o644)
			}
			os.Exit(code)
		},
	})
}

// testClock starts the schedule's clock at BULKSEND_TEST_NOW (RFC 3339)
// and lets it run, for scripts that run a campaign across a window's
// boundary without waiting for it. Only this test binary reads it.
func testClock() {
	if v := os.Getenv("BULKSEND_TEST_NOW"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			panic("BULKSEND_TEST_NOW: " + err.Error())
		}
		start := time.Now()
		now = func() time.Time { return t.Add(time.Since(start)) }
	}
}

// testSandbox makes run --sandbox's sandbox calm (no error answers,
// no late answers) under BULKSEND_TEST_SANDBOX=calm, for scripts whose
// run must end with nothing in doubt whatever its campaign's random ID
// draws; =stops is calm, and every recipient replies STOP at once. Only
// this test binary reads it.
func testSandbox() {
	mode := os.Getenv("BULKSEND_TEST_SANDBOX")
	if mode == "calm" || mode == "stops" {
		wachannel.Demo = func() sandbox.Config {
			cfg := wachannel.DemoSandbox()
			cfg.TransientRate, cfg.PermanentRate, cfg.LateRate = 0, 0, 0
			if mode == "stops" {
				cfg.ReplyRate, cfg.StopRate, cfg.ButtonRate, cfg.StopPromotionsRate, cfg.PreferenceStopRate, cfg.FailRate = 1, 1, 0, 0, 0, 0
				cfg.ReplyDelay = sandbox.Delay{Mean: 10 * time.Millisecond}
			}
			return cfg
		}
	}
}

// TestScripts runs the end-to-end behaviours in testdata/script, one
// script per behaviour.
func TestScripts(t *testing.T) {
	fixtures, err := filepath.Abs(filepath.Join("..", "..", "testdata", "checkpoint"))
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir: filepath.Join("..", "..", "testdata", "script"),
		Setup: func(env *testscript.Env) error {
			env.Setenv("WHATSAPP_TOKEN", "")
			env.Setenv("BULKSEND_API_URL", "http://127.0.0.1:9") // never Meta: nothing listens there
			env.Setenv("BULKSEND_TEST_EXITFILE", filepath.Join(env.WorkDir, ".exitcode"))
			// AWS: never a real account or endpoint, never the machine's profile.
			env.Setenv("AWS_CONFIG_FILE", filepath.Join(env.WorkDir, ".aws-config"))
			env.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(env.WorkDir, ".aws-credentials"))
			env.Setenv("AWS_EC2_METADATA_DISABLED", "true")
			env.Setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
			env.Setenv("BULKSEND_LEDGER", filepath.Join(env.WorkDir, ".ledger.db"))
			return nil
		},
		// [root]: permissions do not stop this user (a container's root).
		Condition: func(cond string) (bool, error) {
			if cond == "root" {
				return os.Geteuid() == 0, nil
			}
			if cond == "romount" {
				return canMountReadOnly(), nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"sandbox":    cmdSandbox,
			"smssandbox": cmdSMSSandbox,
			"sns":        cmdSNS,
			"gencsv":     cmdGenCSV,
			"holdlock":   cmdHoldLock,
			"sqlcount":   cmdSQLCount,
			"exitcode":   cmdExitCode,
			"savecount":  cmdSaveCount,
			"fixture":    cmdFixture(fixtures),
			"pretty":     cmdPretty,
			"utf16":      cmdUTF16,
			"csvcut":     cmdCSVCut,
			"listen":     cmdListen,
			"freeport":   cmdFreePort,
			"waitport":   cmdWaitPort,
			"sqlite":     cmdSQLite,
			"private":    cmdPrivate,
			"romount":    cmdROMount,
			"damage":     cmdDamage,
			"waitcount":  cmdWaitCount,
		},
	})
}

// sandbox [key=value…] starts a sandbox for the rest of the script and
// points BULKSEND_API_URL at it. Its webhooks go to $WORK/webhooks.jsonl.
// 'sandbox wait N' waits until it has had N requests (from a run in the
// background); 'sandbox accepted N' checks it accepted exactly N messages;
// 'sandbox stop' stops it, which writes the webhooks still to come.
// Keys: seed, rate, latency, transient, permanent, late, latedelay, fail,
// expired, template (NAME:PARAMS), definitions (default: the sandbox's
// realistic set, served at GET message_templates and checked on sends),
// status (NAME:STATUS, after definitions), health/senderror/throughput/limit
// (NUMBER-ID:VALUE), marketingoff=1, held, heldfail, cap (fractions),
// mm=onboarded, mmsyncing=NAME, usage=AFTER:MINUTES, read (fraction),
// statusdelay=MIN-MAX, reply/stop/button/stoppromo/prefstop (fractions),
// replydelay=MIN-MAX, webhookurl, appsecret.
func cmdSandbox(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! sandbox")
	}
	if len(args) > 0 && (args[0] == "stop" || args[0] == "wait" || args[0] == "accepted") {
		v, ok := sandboxes.Load(ts)
		if !ok {
			ts.Fatalf("sandbox %s: no sandbox running", args[0])
		}
		rs := v.(*scriptSandbox)
		if args[0] == "stop" {
			sandboxes.Delete(ts)
			rs.stop()
			return
		}
		if args[0] == "accepted" {
			if len(args) != 2 {
				ts.Fatalf("usage: sandbox accepted N")
			}
			want, err := strconv.ParseInt(args[1], 10, 64)
			ts.Check(err)
			if got := rs.sb.Stats().Accepted; got != want {
				ts.Fatalf("sandbox accepted %d messages, want %d", got, want)
			}
			return
		}
		if len(args) != 2 {
			ts.Fatalf("usage: sandbox wait REQUESTS")
		}
		want, err := strconv.ParseInt(args[1], 10, 64)
		ts.Check(err)
		for deadline := time.Now().Add(30 * time.Second); rs.sb.Stats().Requests < want; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				ts.Fatalf("sandbox: %d requests within 30 s, want %d", rs.sb.Stats().Requests, want)
			}
		}
		return
	}
	cfg := sandbox.Config{Seed: 1, Rate: 80, Token: "test-token", ExpiredToken: "expired-token", PairInterval: -1}
	for _, a := range args {
		k, v, _ := strings.Cut(a, "=")
		f := func() float64 {
			n, err := strconv.ParseFloat(v, 64)
			ts.Check(err)
			return n
		}
		d := func() time.Duration {
			n, err := time.ParseDuration(v)
			ts.Check(err)
			return n
		}
		switch k {
		case "seed":
			cfg.Seed = int64(f())
		case "rate":
			cfg.Rate = f()
		case "latency":
			cfg.Latency = d()
		case "transient":
			cfg.TransientRate = f()
		case "permanent":
			cfg.PermanentRate = f()
		case "late":
			cfg.LateRate = f()
		case "latedelay":
			cfg.LateDelay = d()
		case "fail":
			cfg.FailRate = f()
		case "template":
			tpl, err := sandbox.ParseTemplate(v)
			ts.Check(err)
			cfg.Templates = append(cfg.Templates, tpl)
		case "definitions":
			if v != "default" {
				ts.Fatalf("sandbox: definitions=default is the only set")
			}
			cfg.Definitions = sandbox.DefaultTemplates()
		case "health", "senderror", "throughput", "limit":
			// KEY=NUMBER-ID:VALUE sets what that sender number reports or answers.
			id, val, _ := strings.Cut(v, ":")
			if cfg.Numbers == nil {
				cfg.Numbers = map[string]sandbox.NumberInfo{}
			}
			n := cfg.Numbers[id]
			switch k {
			case "health":
				n.Health = val
			case "senderror":
				code, err := strconv.Atoi(val)
				ts.Check(err)
				n.SendError = code
			case "throughput":
				n.Throughput = val
			case "limit":
				n.MessagingLimit = val
			}
			cfg.Numbers[id] = n
		case "numberrate":
			// numberrate=NUMBER-ID:N: that number allows N messages a second.
			id, val, _ := strings.Cut(v, ":")
			n, err := strconv.ParseFloat(val, 64)
			ts.Check(err)
			if cfg.Rates == nil {
				cfg.Rates = map[string]float64{}
			}
			cfg.Rates[id] = n
		case "marketingoff":
			cfg.MarketingOffOnCloudAPI = v == "1"
		case "held":
			cfg.HeldRate = f()
		case "heldfail":
			cfg.HeldFailRate = f()
		case "cap":
			cfg.MarketingCapRate = f()
		case "mm":
			cfg.MMOnboarded = v == "onboarded"
		case "mmsyncing":
			cfg.MMSyncing = append(cfg.MMSyncing, v)
		case "usage":
			// usage=AFTER:MINUTES: the call budget is spent after AFTER accepted sends.
			after, mins, _ := strings.Cut(v, ":")
			n, err := strconv.ParseInt(after, 10, 64)
			ts.Check(err)
			m, err := strconv.Atoi(mins)
			ts.Check(err)
			cfg.UsageAfter, cfg.RegainAccessMinutes = n, m
		case "reply":
			cfg.ReplyRate = f() // recipients talk back: see sandbox.Config.ReplyRate
		case "stop":
			cfg.StopRate = f()
		case "button":
			cfg.ButtonRate = f()
		case "stoppromo":
			cfg.StopPromotionsRate = f()
		case "prefstop":
			cfg.PreferenceStopRate = f()
		case "replydelay":
			rd, err := sandbox.ParseDelay(v)
			ts.Check(err)
			cfg.ReplyDelay = rd
		case "read":
			cfg.ReadRate = f() // the share of delivered messages read
		case "statusdelay":
			// statusdelay=MIN-MAX: each of sent, delivered and read comes
			// that long after the one before.
			d, err := sandbox.ParseDelay(v)
			ts.Check(err)
			cfg.SentDelay, cfg.DeliveredDelay, cfg.ReadDelay = d, d, d
		case "webhookurl":
			cfg.WebhookURL = v // each webhook is also POSTed there, signed with appsecret
		case "appsecret":
			cfg.AppSecret = v
		case "status":
			// status=NAME:STATUS changes a definition's status, e.g. paused.
			name, status, _ := strings.Cut(v, ":")
			found := false
			for i := range cfg.Definitions {
				if cfg.Definitions[i].Name == name {
					cfg.Definitions[i].Status, found = status, true
				}
			}
			if !found {
				ts.Fatalf("sandbox: status=%s: no such definition (put definitions=default first)", v)
			}
		default:
			ts.Fatalf("sandbox: unknown key %q", k)
		}
	}
	// Unbuffered here: the sandbox flushes each webhook as it is emitted,
	// so the log holds what has happened so far.
	wh, err := os.Create(ts.MkAbs("webhooks.jsonl"))
	ts.Check(err)
	cfg.Webhooks = wh
	sb := sandbox.New(cfg)
	srv := httptest.NewServer(sb)
	stop := sync.OnceFunc(func() {
		srv.Close()
		ts.Check(sb.Close())
		ts.Check(wh.Close())
	})
	sandboxes.Store(ts, &scriptSandbox{sb, stop})
	ts.Defer(stop)
	ts.Setenv("BULKSEND_API_URL", srv.URL)
	ts.Setenv("WHATSAPP_TOKEN", "test-token")
}

// sandboxes holds each script's running sandbox, for 'sandbox stop' and
// 'sandbox wait'.
var sandboxes sync.Map // *testscript.TestScript → *scriptSandbox

type scriptSandbox struct {
	sb   *sandbox.Server
	stop func()
}

// fixture VERSION copies the checkpoint fixture of that schema version
// (testdata/checkpoint) into the script's directory as campaign.csv,
// campaign.bulksend.db and VERSION.export.csv, its export when written.
func cmdFixture(dir string) func(ts *testscript.TestScript, neg bool, args []string) {
	return func(ts *testscript.TestScript, neg bool, args []string) {
		if len(args) != 1 || neg {
			ts.Fatalf("usage: fixture VERSION")
		}
		for from, to := range map[string]string{".csv": "campaign.csv", ".checkpoint.db": "campaign.bulksend.db", ".export.csv": args[0] + ".export.csv"} {
			b, err := os.ReadFile(filepath.Join(dir, args[0]+from))
			ts.Check(err)
			ts.Check(os.WriteFile(ts.MkAbs(to), b, 0o600))
		}
		// The provider's log of the run that wrote it, where there is one.
		for _, log := range []string{".webhooks.jsonl", ".sms-events.jsonl"} {
			if b, err := os.ReadFile(filepath.Join(dir, args[0]+log)); err == nil {
				ts.Check(os.WriteFile(ts.MkAbs(args[0]+log), b, 0o600))
			}
		}
	}
}

// pretty IN OUT writes the NDJSON log IN as its bodies pretty-printed, one
// after another, as jq . and many webhook receivers write them.
func cmdPretty(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 || neg {
		ts.Fatalf("usage: pretty IN OUT")
	}
	var out bytes.Buffer
	for _, line := range strings.Split(strings.TrimSpace(ts.ReadFile(args[0])), "\n") {
		ts.Check(json.Indent(&out, []byte(line), "", "  "))
		out.WriteByte('\n')
	}
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), out.Bytes(), 0o644))
}

// utf16 IN OUT writes the UTF-8 file IN as UTF-16LE with a byte-order mark,
// tabs for commas: what Excel's "Unicode Text" export writes.
func cmdUTF16(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 || neg {
		ts.Fatalf("usage: utf16 IN OUT")
	}
	text := strings.ReplaceAll(strings.ReplaceAll(ts.ReadFile(args[0]), ",", "\t"), "\n", "\r\n")
	out := []byte{0xff, 0xfe}
	for _, u := range utf16.Encode([]rune(text)) {
		out = binary.LittleEndian.AppendUint16(out, u)
	}
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), out, 0o644))
}

// gencsv FILE N writes a campaign CSV of N recipients with two parameters.
func cmdGenCSV(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: gencsv FILE N")
	}
	n, err := strconv.Atoi(args[1])
	ts.Check(err)
	var b strings.Builder
	b.WriteString("phone,name,code\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "%s,Name %d,C%d\n", csvin.SampleNumber(i), i, i)
	}
	ts.Check(os.WriteFile(ts.MkAbs(args[0]), []byte(b.String()), 0o644))
}

// holdlock DB holds the checkpoint lock of DB for the rest of the script.
func cmdHoldLock(ts *testscript.TestScript, neg bool, args []string) {
	l, err := store.Acquire(ts.MkAbs(args[0]), "test")
	ts.Check(err)
	ts.Defer(func() { l.Release() })
}

// romount SRC DST bind-mounts folder SRC read-only at DST for the rest of
// the script ([romount] says whether this machine lets the test do so).
func cmdROMount(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: romount SRC DST")
	}
	src, dst := ts.MkAbs(args[0]), ts.MkAbs(args[1])
	ts.Check(roMount(src, dst))
	ts.Defer(func() { syscall.Unmount(dst, syscall.MNT_DETACH) })
}

func roMount(src, dst string) error {
	if err := syscall.Mount(src, dst, "", syscall.MS_BIND, ""); err != nil {
		return err
	}
	if err := syscall.Mount(src, dst, "", syscall.MS_BIND|syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
		syscall.Unmount(dst, syscall.MNT_DETACH)
		return err
	}
	return nil
}

var canMountReadOnly = sync.OnceValue(func() bool {
	dir, err := os.MkdirTemp("", "bulksend-romount-")
	if err != nil {
		return false
	}
	defer os.RemoveAll(dir)
	src, dst := filepath.Join(dir, "src"), filepath.Join(dir, "dst")
	os.Mkdir(src, 0o700)
	os.Mkdir(dst, 0o700)
	if roMount(src, dst) != nil {
		return false
	}
	syscall.Unmount(dst, syscall.MNT_DETACH)
	return true
})

// private FILE… checks that each FILE is readable by its owner alone (0600).
func cmdPrivate(ts *testscript.TestScript, neg bool, args []string) {
	for _, name := range args {
		fi, err := os.Stat(ts.MkAbs(name))
		ts.Check(err)
		if got := fi.Mode().Perm(); (got == 0o600) == neg {
			ts.Fatalf("%s: mode %v", name, got)
		}
	}
}

// savecount DB STATUS VAR sets $VAR to the number of rows in STATUS.
func cmdSaveCount(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 3 {
		ts.Fatalf("usage: savecount DB STATUS VAR")
	}
	ts.Setenv(args[2], strconv.FormatInt(countOf(ts, args[0], args[1]), 10))
}

func countOf(ts *testscript.TestScript, db, status string) int64 {
	st, err := store.Open(ts.MkAbs(db))
	ts.Check(err)
	defer st.Close()
	c, err := st.Counts(context.Background())
	ts.Check(err)
	got := map[string]int64{"all": c.Total, "pending": c.Pending, "sending": c.Sending, "in_doubt": c.InDoubt,
		"sent": c.Sent, "delivered": c.Delivered, "read": c.Read, "failed": c.Failed, "skipped": c.Skipped}
	v, ok := got[status]
	if !ok {
		ts.Fatalf("unknown status %q", status)
	}
	return v
}

// waitcount DB STATUS N waits up to 30 s until at least N rows of
// checkpoint DB are in STATUS (a run or a receiver in the background
// writes it).
func cmdWaitCount(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 3 {
		ts.Fatalf("usage: waitcount DB STATUS N")
	}
	want, err := strconv.ParseInt(args[2], 10, 64)
	ts.Check(err)
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := store.OpenRead(ts.MkAbs(args[0]))
		if err == nil {
			var c campaign.Counts
			c, err = st.Counts(context.Background())
			st.Close()
			got := map[string]int64{"delivered": c.Delivered, "read": c.Read, "sent": c.Sent, "pending": c.Pending, "skipped": c.Skipped}[args[1]]
			if err == nil && got >= want {
				return
			}
		}
		if time.Now().After(deadline) {
			ts.Fatalf("waitcount: fewer than %d rows %s within 30 s (%v)", want, args[1], err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// sqlcount DB STATUS N asserts that N rows of checkpoint DB are in STATUS
// ("all" for every row).
func cmdSQLCount(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 3 {
		ts.Fatalf("usage: sqlcount DB STATUS N")
	}
	v := countOf(ts, args[0], args[1])
	want, err := strconv.ParseInt(args[2], 10, 64)
	ts.Check(err)
	if (v == want) == neg {
		ts.Fatalf("%s rows: %d, want %s%d", args[1], v, map[bool]string{true: "not ", false: ""}[neg], want)
	}
}

// exitcode N asserts the exit code of the last bulksend the script ran.
func cmdExitCode(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: exitcode N")
	}
	b, err := os.ReadFile(ts.MkAbs(".exitcode"))
	ts.Check(err)
	if (string(b) == args[0]) == neg {
		ts.Fatalf("exit code %s, want %s", b, args[0])
	}
}

// listen VAR listens on a free port of 127.0.0.1 for the rest of the
// script and sets $VAR to its address: an address in use.
func cmdListen(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 || neg {
		ts.Fatalf("usage: listen VAR")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	ts.Check(err)
	ts.Defer(func() { l.Close() })
	ts.Setenv(args[0], l.Addr().String())
}

// freeport VAR sets $VAR to an address of 127.0.0.1 with a port free a
// moment ago, for a server the script starts.
func cmdFreePort(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 || neg {
		ts.Fatalf("usage: freeport VAR")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	ts.Check(err)
	ts.Setenv(args[0], l.Addr().String())
	ts.Check(l.Close())
}

// waitport ADDR waits until something listens at ADDR (at most 30 s).
func cmdWaitPort(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 || neg {
		ts.Fatalf("usage: waitport ADDR")
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		c, err := net.Dial("tcp", args[0])
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("nothing listens at %s: %v", args[0], err)
		}
	}
}

// csvcut IN OUT N writes the first N columns of CSV file IN to OUT, so a
// golden file from before columns were appended still compares exactly.
func cmdCSVCut(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 3 {
		ts.Fatalf("usage: csvcut IN OUT N")
	}
	n, err := strconv.Atoi(args[2])
	ts.Check(err)
	f, err := os.Open(ts.MkAbs(args[0]))
	ts.Check(err)
	defer f.Close()
	r := csv.NewReader(f)
	var b strings.Builder
	w := csv.NewWriter(&b)
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		ts.Check(err)
		ts.Check(w.Write(rec[:min(n, len(rec))]))
	}
	w.Flush()
	ts.Check(w.Error())
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), []byte(b.String()), 0o644))
}
