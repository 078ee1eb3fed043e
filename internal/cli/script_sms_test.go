package cli

import (
	"bufio"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/bulksend/bulksend/internal/sms/smssandbox"
)

// smssandbox [key=value…] starts an SMS sandbox (a fake AWS End User
// Messaging SMS) for the rest of the script and points the AWS SDK's
// standard environment at it: AWS_ENDPOINT_URL, AWS_REGION and static
// keys, so a run takes the same credential chain as against AWS. Its
// event records go to $WORK/sms-events.jsonl.
// 'smssandbox stop' stops it and flushes its events; 'smssandbox stats
// KEY N' checks a counter (requests, accepted, throttled, optedout).
// Keys: seed, mps, latency, number (an E.164 number the account owns,
// repeatable; none: any identity), optout (PHONE, repeatable), account
// (no-identity, spend-limit, access-denied, expired), throttlealways (an
// identity), throttle, internal, late, latedelay, fail, configsets (A,B),
// queue=1 (its events also go to its SQS-shaped queue, as signed SNS
// notifications; 'smssandbox queue N' waits until the queue holds N;
// 'smssandbox pending 0' until no event or reply is still to come),
// reply, stop, help (Config.ReplyRate, StopRate, HelpRate: replies go to
// the queue and the events log) and replydelay. 'smssandbox stats' also
// knows replies, stops and helps.
func cmdSMSSandbox(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! smssandbox")
	}
	if len(args) > 0 && (args[0] == "stop" || args[0] == "stats" || args[0] == "queue" || args[0] == "pending") {
		v, ok := smsSandboxes.Load(ts)
		if !ok {
			ts.Fatalf("smssandbox %s: no sandbox running", args[0])
		}
		rs := v.(*scriptSMSSandbox)
		if args[0] == "queue" || args[0] == "pending" {
			// smssandbox queue|pending N: wait (30 s at most) until the
			// queue holds N, or N events and replies are still to come.
			want, err := strconv.Atoi(args[len(args)-1])
			ts.Check(err)
			n := rs.sb.QueueLen
			if args[0] == "pending" {
				n = rs.sb.Pending
			}
			for deadline := time.Now().Add(30 * time.Second); n() != want; time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					ts.Fatalf("the sandbox's %s is %d, want %d", args[0], n(), want)
				}
			}
			return
		}
		if args[0] == "stop" {
			smsSandboxes.Delete(ts)
			rs.stop()
			return
		}
		if len(args) != 3 {
			ts.Fatalf("usage: smssandbox stats KEY N")
		}
		want, err := strconv.ParseInt(args[2], 10, 64)
		ts.Check(err)
		st := rs.sb.Stats()
		got, known := map[string]int64{"requests": st.Requests, "accepted": st.Accepted, "throttled": st.Throttled, "optedout": st.OptedOut,
			"replies": st.Replies, "stops": st.Stops, "helps": st.Helps}[args[1]]
		if !known {
			ts.Fatalf("smssandbox stats: unknown counter %q", args[1])
		}
		if got != want {
			ts.Fatalf("smssandbox %s = %d, want %d", args[1], got, want)
		}
		return
	}
	cfg := smssandbox.Config{Seed: 1, MPS: 100, OptOuts: map[string][]string{}}
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
		case "mps":
			cfg.MPS = f()
		case "latency":
			cfg.Latency = d()
		case "number":
			cfg.Numbers = append(cfg.Numbers, smssandbox.Number{PhoneNumber: v})
		case "optout":
			cfg.OptOuts["Default"] = append(cfg.OptOuts["Default"], v)
		case "account":
			cfg.AccountError = v
		case "throttlealways":
			cfg.ThrottleAlways = append(cfg.ThrottleAlways, v)
		case "throttle":
			cfg.ThrottleRate = f()
		case "internal":
			cfg.InternalRate = f()
		case "late":
			cfg.LateRate = f()
		case "latedelay":
			cfg.LateDelay = d()
		case "fail":
			cfg.FailRate = f()
		case "configsets":
			cfg.ConfigurationSets = strings.Split(v, ",")
		case "queue":
			cfg.Queue = v == "1"
		case "reply":
			cfg.ReplyRate = f()
		case "stop":
			cfg.StopRate = f()
		case "help":
			cfg.HelpRate = f()
		case "replydelay":
			cfg.ReplyDelay = d()
		default:
			ts.Fatalf("smssandbox: unknown key %q", k)
		}
	}
	ev, err := os.Create(ts.MkAbs("sms-events.jsonl"))
	ts.Check(err)
	bw := bufio.NewWriter(ev)
	cfg.Events, cfg.EventDelay = bw, 10*time.Millisecond
	sb := smssandbox.New(cfg)
	srv := httptest.NewServer(sb)
	stop := sync.OnceFunc(func() {
		srv.Close()
		ts.Check(sb.Close())
		ts.Check(bw.Flush())
		ts.Check(ev.Close())
	})
	smsSandboxes.Store(ts, &scriptSMSSandbox{sb, stop})
	ts.Defer(stop)
	ts.Setenv("AWS_ENDPOINT_URL", srv.URL)
	ts.Setenv("AWS_REGION", "us-east-1")
	ts.Setenv("AWS_ACCESS_KEY_ID", "AKIDSCRIPT")
	ts.Setenv("AWS_SECRET_ACCESS_KEY", "script-secret")
}

// smsSandboxes holds each script's running SMS sandbox.
var smsSandboxes sync.Map // *testscript.TestScript → *scriptSMSSandbox

type scriptSMSSandbox struct {
	sb   *smssandbox.Server
	stop func()
}
