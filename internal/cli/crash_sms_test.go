package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/csvin"
	"github.com/bulksend/bulksend/internal/sms/smssandbox"
	"github.com/bulksend/bulksend/internal/store"
)

// smsRig is an SMS campaign against an in-process SMS sandbox, run by
// child processes of the test binary that the test can kill. The children
// reach the sandbox through the AWS SDK's standard environment, as a run
// against AWS would, and nothing of the machine's AWS configuration.
type smsRig struct {
	t   *testing.T
	dir string
	cfg smssandbox.Config
	url string
	sb  *smssandbox.Server
	srv *httptest.Server
	// The event records of every sandbox the rig started, appended to one
	// log: what reconcile reads, and the test's record of every message
	// the sandboxes sent.
	events *os.File
	ew     *bufio.Writer
}

// smsBody makes rows of one to three parts, GSM-7 and UCS-2, with the
// note column.
const smsBody = "Hi {{name}}, your code is {{code}}. {{note}}"

func newSMSRig(t *testing.T, rows int, cfg smssandbox.Config) *smsRig {
	t.Helper()
	dir := t.TempDir()
	r := &smsRig{t: t, dir: dir, cfg: cfg}
	notes := []string{
		"",
		"See you soon!",
		strings.Repeat("Spring sale: 20% off everything until Sunday. ", 4), // 2 parts
		strings.Repeat("Spring sale: 20% off everything until Sunday. ", 8), // 3 parts
		"Ждём вас!", // UCS-2, 1 part
		strings.Repeat("Весенняя распродажа до воскресенья. ", 2), // UCS-2, 2 parts
		strings.Repeat("Весенняя распродажа до воскресенья. ", 4), // UCS-2, 3 parts
	}
	var b strings.Builder
	b.WriteString("phone,name,code,note\n")
	for i := 0; i < rows; i++ {
		fmt.Fprintf(&b, "%s,Name %d,C%d,%s\n", csvin.SampleNumber(i), i, i, strings.TrimSpace(notes[i%len(notes)]))
	}
	if err := os.WriteFile(filepath.Join(dir, "campaign.csv"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "body.txt"), []byte(smsBody+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r.startSandbox()
	t.Cleanup(r.stopSandbox)
	return r
}

// startSandbox starts a sandbox whose event records are appended to
// sms-events.jsonl.
func (r *smsRig) startSandbox() {
	f, err := os.OpenFile(filepath.Join(r.dir, "sms-events.jsonl"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		r.t.Fatal(err)
	}
	r.events, r.ew = f, bufio.NewWriter(f)
	cfg := r.cfg
	cfg.Events, cfg.EventDelay = r.ew, 20*time.Millisecond
	r.cfg.Seed++ // a message's fate is drawn from the seed: a new sandbox draws anew
	r.sb = smssandbox.New(cfg)
	r.srv = httptest.NewServer(r.sb)
	r.url = r.srv.URL
}

// stopSandbox stops the sandbox and writes its pending events.
func (r *smsRig) stopSandbox() {
	if r.srv == nil {
		return
	}
	r.srv.Close()
	if err := r.sb.Close(); err != nil {
		r.t.Error(err)
	}
	if err := r.ew.Flush(); err != nil {
		r.t.Error(err)
	}
	if err := r.events.Close(); err != nil {
		r.t.Error(err)
	}
	r.srv = nil
}

// command is bulksend args as a child process pointed at the sandbox by
// the AWS environment; the machine's own AWS variables are left out, and
// its AWS files cannot be read.
func (r *smsRig) command(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Dir = r.dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "BULKSEND_TEST_MAIN=1",
		"AWS_ENDPOINT_URL="+r.url, "AWS_REGION=us-east-1",
		"AWS_ACCESS_KEY_ID=AKIDCRASHTEST", "AWS_SECRET_ACCESS_KEY=crash-test-secret",
		"AWS_CONFIG_FILE="+filepath.Join(r.dir, "no-aws-config"),
		"AWS_SHARED_CREDENTIALS_FILE="+filepath.Join(r.dir, "no-aws-credentials"),
		"AWS_EC2_METADATA_DISABLED=true")
	return cmd
}

// export returns the checkpoint's rows.
func (r *smsRig) export() []store.ExportRow {
	st, err := store.Open(filepath.Join(r.dir, "campaign.bulksend.db"))
	if err != nil {
		r.t.Fatal(err)
	}
	defer st.Close()
	var rows []store.ExportRow
	if err := st.Export(context.Background(), func(e store.ExportRow) error { rows = append(rows, e); return nil }); err != nil {
		r.t.Fatal(err)
	}
	return rows
}

func countsOf(rows []store.ExportRow) campaign.Counts {
	var c campaign.Counts
	for _, e := range rows {
		c.Add(e.Status, 1)
	}
	return c
}

// smsSent is one message a sandbox sent, from its event record.
type smsSent struct {
	ID, To, Type string
	Context      string // its Context's bulksend entry: campaign:row
}

// sentMessages reads the event log: per row, the messages the sandboxes
// sent for it (the record's Context names campaign and row). Read it once
// the sandboxes are stopped: then it holds every message they sent.
func (r *smsRig) sentMessages() map[int64][]smsSent {
	b, err := os.ReadFile(filepath.Join(r.dir, "sms-events.jsonl"))
	if err != nil {
		r.t.Fatal(err)
	}
	out := map[int64][]smsSent{}
	campaignID := ""
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		var ev struct {
			EventType   string            `json:"eventType"`
			MessageID   string            `json:"messageId"`
			Destination string            `json:"destinationPhoneNumber"`
			Context     map[string]string `json:"context"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			r.t.Fatalf("event record %q: %v", sc.Text(), err)
		}
		ref, ok := campaign.ParseRefKey(ev.Context["bulksend"])
		id, row := ref.Campaign, ref.Row
		if !ok || (campaignID != "" && id != campaignID) {
			r.t.Fatalf("event record without this campaign's context: %s", sc.Text())
		}
		campaignID = id
		out[row] = append(out[row], smsSent{ID: ev.MessageID, To: ev.Destination, Type: ev.EventType, Context: ev.Context["bulksend"]})
	}
	if err := sc.Err(); err != nil {
		r.t.Fatal(err)
	}
	return out
}

var smsRunArgs = []string{"run", "campaign.csv", "--channel", "sms", "--from", "+12065550101,+12065550102", "--text-file", "body.txt",
	"--rate", "300", "--request-timeout", "400ms"}

// TestKillResumeSMS kills `bulksend run --channel sms` with SIGKILL at
// random points once messages are going out, and runs it again until no
// row is left to send; reconcile with the sandbox's event log settles the
// rows the kills (and answers that never came) left in doubt, and a last
// run sends those that never went out. Every row is then sent exactly
// once (no destination and context twice in the event log) and settled
// with the MessageId of its one message, delivered or failed as its final
// event says.
func TestKillResumeSMS(t *testing.T) {
	if testing.Short() {
		t.Skip("kills child processes for several seconds")
	}
	const rows = 900
	r := newSMSRig(t, rows, smssandbox.Config{
		Seed: 3, MPS: 400,
		Latency: 20 * time.Millisecond, Jitter: 15 * time.Millisecond,
		InternalRate: 0.01, LateRate: 0.01, LateDelay: time.Second, FailRate: 0.03,
	})
	rng := rand.New(rand.NewPCG(1, 2))
	kills, runs := 0, 0
	for ; runs < 40; runs++ {
		cmd := r.command(append(smsRunArgs, "--log-level", "info")...)
		w := startWatched(t, cmd, "msg=sending")
		<-w.seen
		// Kill once some messages of this run went out, at a random point.
		before := r.sb.Stats().Accepted
		accepted := func() bool { return r.sb.Stats().Accepted > before }
		exited := false
		for !accepted() && !exited {
			select {
			case err := <-w.exited:
				w.exited <- err
				exited = true
			case <-time.After(2 * time.Millisecond):
			}
		}
		select {
		case err := <-w.exited:
			if code := exitCodeOf(err); code != ExitOK && code != ExitUnfinished {
				t.Fatalf("run %d: exit %d\n%s", runs, code, w.stderr.String())
			}
		case <-time.After(time.Duration(rng.IntN(400)) * time.Millisecond):
			cmd.Process.Signal(syscall.SIGKILL)
			<-w.exited
			kills++
			continue
		}
		if c := countsOf(r.export()); c.Pending == 0 && c.Sending == 0 {
			break // only rows in doubt are left
		}
	}
	if kills < 3 {
		t.Fatalf("only %d kills landed: the test proves little", kills)
	}
	c := countsOf(r.export())
	if c.Pending != 0 || c.Sending != 0 {
		t.Fatalf("after %d runs: %+v", runs, c)
	}
	if c.InDoubt == 0 {
		t.Fatalf("no row in doubt after %d kills: %+v", kills, c)
	}
	t.Logf("%d runs, %d kills; before reconcile: %+v", runs+1, kills, c)

	// Reconcile with every event the sandbox wrote: rows in doubt whose
	// message went out are settled, the others made pending again.
	r.stopSandbox()
	sent := r.sentMessages()
	out, err := r.command("reconcile", "campaign.csv", "sms-events.jsonl", "--unmatched", "resend", "--grace", "0s").CombinedOutput()
	if code := exitCodeOf(err); code != ExitOK {
		t.Fatalf("reconcile: exit %d\n%s", code, out)
	}
	resent := int64(0)
	for _, e := range r.export() {
		switch msgs := sent[e.Row]; {
		case len(msgs) == 0 && e.Status == campaign.Pending:
			resent++
		case len(msgs) == 1 && e.Status == finalStatus(msgs[0]) && e.MessageID == msgs[0].ID:
		default:
			t.Errorf("after reconcile, row %d is %s %q; the sandbox sent it %v", e.Row, e.Status, e.MessageID, msgs)
		}
	}
	t.Logf("after reconcile: %+v, %d rows to send again\n%s", countsOf(r.export()), resent, out)

	// The rows that never went out, to a sandbox that answers every
	// request in time; then the events of all the runs deliver every row.
	r.cfg.LateRate, r.cfg.InternalRate = 0, 0
	r.startSandbox()
	out, err = r.command(append(smsRunArgs, "--request-timeout", "10s")...).CombinedOutput()
	if code := exitCodeOf(err); code != ExitOK {
		t.Fatalf("final run: exit %d\n%s", code, out)
	}
	if st := r.sb.Stats(); st.Accepted != resent || st.Throttled != 0 {
		t.Errorf("final run: the sandbox sent %d messages (%d throttled), want the %d rows made pending", st.Accepted, st.Throttled, resent)
	}
	r.stopSandbox()
	out, err = r.command("reconcile", "campaign.csv", "sms-events.jsonl").CombinedOutput()
	if code := exitCodeOf(err); code != ExitOK {
		t.Fatalf("last reconcile: exit %d\n%s", code, out)
	}

	sent = r.sentMessages()
	final := r.export()
	if len(final) != rows {
		t.Fatalf("%d rows in the checkpoint, want %d", len(final), rows)
	}
	seen := map[string]int{} // destination and context → messages sent
	for _, msgs := range sent {
		for _, m := range msgs {
			seen[m.To+" "+m.Context]++
		}
	}
	for k, n := range seen {
		if n > 1 {
			t.Errorf("%s: sent %d times", k, n)
		}
	}
	failed := int64(0) // rows whose message failed after it was sent
	for _, e := range final {
		msgs := sent[e.Row]
		if len(msgs) != 1 {
			t.Errorf("row %d: the sandboxes sent it %d times: %v", e.Row, len(msgs), msgs)
			continue
		}
		m := msgs[0]
		if m.To != e.Phone || m.ID != e.MessageID || e.Status != finalStatus(m) {
			t.Errorf("row %d to %s: %s %q; its message %+v", e.Row, e.Phone, e.Status, e.MessageID, m)
		}
		if m.Type != "TEXT_DELIVERED" {
			failed++
		}
	}
	c = countsOf(final)
	if c.Delivered+c.Failed != rows || c.Failed != failed || c.Total != rows {
		t.Errorf("final counts %+v: want all %d rows delivered, or failed as the %d failure events say", c, rows, failed)
	}
	if failed == 0 {
		t.Errorf("no message failed after it was sent: the test does not show such rows settled")
	}
	t.Logf("final: %+v", c)
}

// finalStatus is the status an event record settles its row in.
func finalStatus(m smsSent) campaign.Status {
	if m.Type == "TEXT_DELIVERED" {
		return campaign.Delivered
	}
	return campaign.Failed
}
