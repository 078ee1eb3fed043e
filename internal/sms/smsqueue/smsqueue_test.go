package smsqueue_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/bulksend/bulksend/internal/engine"
	"github.com/bulksend/bulksend/internal/logfile"
	"github.com/bulksend/bulksend/internal/reconcile"
	"github.com/bulksend/bulksend/internal/sms"
	"github.com/bulksend/bulksend/internal/sms/smsevent"
	"github.com/bulksend/bulksend/internal/sms/smsqueue"
	"github.com/bulksend/bulksend/internal/sms/smssandbox"
	"github.com/bulksend/bulksend/internal/store"
	"github.com/bulksend/bulksend/internal/whatsapp/receive"
)

const (
	sender = "+12065550152"
	msgID  = "0e5b2c7a-3f41-4d2e-9a0b-5c1d2e3f4a"
	rows   = 25
)

// TestMain: as a child (SMSQUEUE_CHILD=1), poll the queue at
// SMSQUEUE_URL into the log in SMSQUEUE_DIR and kill -9 this process once
// the first batch is kept, before its delete.
func TestMain(m *testing.M) {
	if os.Getenv("SMSQUEUE_CHILD") == "1" {
		r, err := receive.New(receive.Config{NoWebhooks: true, Dir: os.Getenv("SMSQUEUE_DIR")})
		if err != nil {
			panic(err)
		}
		p := smsqueue.New(smsqueue.WithAfterKeep(smsqueue.Config{Queue: queue(os.Getenv("SMSQUEUE_URL")), Keeper: r, Wait: 1},
			func() { syscall.Kill(os.Getpid(), syscall.SIGKILL) }))
		p.Run(context.Background())
		panic("the poller returned")
	}
	os.Exit(m.Run())
}

// queue is the sandbox's queue at base, through the SDK as against AWS.
func queue(base string) *sms.Queue {
	q, err := sms.NewQueue(context.Background(), base+"/111122223333/bulksend-sms-events", sms.Options{
		Region: "us-east-1", Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "AKID", SecretAccessKey: "SECRET"}, nil
		}),
	})
	if err != nil {
		panic(err)
	}
	return q
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

func event(row int) string {
	return fmt.Sprintf(`{"eventType":"TEXT_DELIVERED","eventVersion":"1.0","eventTimestamp":%d,"isFinal":true,"originationPhoneNumber":"%s","messageId":"%s%02d","context":{"bulksend":"spring-2026:%d"},"totalMessageParts":1}`,
		1796032800000+int64(row), sender, msgID, row, row)
}

// TestCrashBetweenKeepAndDelete: a receiver killed (-9) after keeping a
// batch and before deleting it loses nothing: the queue delivers the
// batch again after its visibility timeout, the next receiver keeps it a
// second time with the rest and deletes all, and reconcile applies each
// event once however often the log holds it.
func TestCrashBetweenKeepAndDelete(t *testing.T) {
	clk := &clock{t: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)}
	sb := smssandbox.New(smssandbox.Config{Queue: true, QueueVisibility: 30 * time.Second, Now: clk.now})
	srv := httptest.NewServer(sb)
	t.Cleanup(srv.Close)
	signer := smssandbox.Signer()
	for row := 1; row <= rows; row++ {
		sb.Enqueue(string(signer.Notification(smssandbox.SNSTopicArn, event(row), clk.now(), "2")))
	}
	sb.Enqueue(`{"originationNumber":"+14255550101","destinationNumber":"+12065550152","messageBody":"STOP","inboundMessageId":"i1"}`)
	sb.Enqueue("not JSON")
	dir := t.TempDir()

	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), "SMSQUEUE_CHILD=1", "SMSQUEUE_URL="+srv.URL, "SMSQUEUE_DIR="+dir)
	child.Stderr = os.Stderr
	err := child.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child: %v, want killed", err)
	}
	if n := sb.QueueLen(); n != rows+2 {
		t.Fatalf("after the kill the queue holds %d, want %d (nothing deleted)", n, rows+2)
	}
	first := countEvents(t, dir)
	if len(first) != 10 {
		t.Fatalf("the child kept %d events, want its first batch of 10", len(first))
	}

	// The dead child's long poll may still wait in the sandbox: closed,
	// it takes nothing when the batch is visible again.
	srv.CloseClientConnections()
	time.Sleep(100 * time.Millisecond)
	clk.add(31 * time.Second) // the batch the child took is visible again
	r, err := receive.New(receive.Config{NoWebhooks: true, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	p := smsqueue.New(smsqueue.Config{Queue: queue(srv.URL), Keeper: r, Wait: 1})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	for deadline := time.Now().Add(30 * time.Second); sb.QueueLen() > 1; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the queue still holds %d", sb.QueueLen())
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	st := p.Stats()
	if st.Kept != rows+1 || st.Deleted != rows+1 || st.Inbound != 1 || st.NotJSON != 1 {
		t.Errorf("stats %+v", st)
	}

	got := countEvents(t, dir)
	for row := 1; row <= rows; row++ {
		id := fmt.Sprintf("%s%02d", msgID, row)
		want := 1
		if first[id] > 0 {
			want = 2
		}
		if got[id] != want {
			t.Errorf("%s kept %d times, want %d", id, got[id], want)
		}
	}

	cp := checkpoint(t)
	if sum := apply(t, cp, dir); sum.Changed != rows || sum.Events != rows+10 {
		t.Errorf("reconcile: %+v, want %d rows changed of %d events", sum, rows, rows+10)
	}
	if sum := apply(t, cp, dir); sum.Changed != 0 {
		t.Errorf("reconcile again: %d changed, want 0", sum.Changed)
	}
	n, err := cp.Counts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if n.Delivered != rows {
		t.Errorf("counts %+v, want %d delivered", n, rows)
	}
}

// countEvents is how many times the log in dir holds each message's event.
func countEvents(t *testing.T, dir string) map[string]int {
	t.Helper()
	files, err := receive.Files(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, path := range files {
		f, err := logfile.Open(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		r := smsevent.NewReader(f)
		for {
			ev, err := r.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			out[ev.MessageID]++
		}
		f.Close()
	}
	return out
}

// checkpoint is campaign spring-2026 with its rows sent from sender, each
// with its message ID.
func checkpoint(t *testing.T) *store.Store {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(filepath.Join(t.TempDir(), "c.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	row := int64(0)
	_, err = st.Import(ctx, func() (store.Row, error) {
		if row == rows {
			return store.Row{}, io.EOF
		}
		row++
		return store.Row{Row: row, Line: int(row) + 1, Phone: fmt.Sprintf("+142555501%02d", row), Sender: sender, Parts: 1, Encoding: "GSM"}, nil
	}, func() store.Settings { return store.Settings{CampaignID: "spring-2026", MaxAttempts: 3} })
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	jobs, err := st.Claim(ctx, sender, at, rows)
	if err != nil || len(jobs) != rows {
		t.Fatalf("claim: %d %v", len(jobs), err)
	}
	var res []engine.Result
	for _, j := range jobs {
		res = append(res, engine.Result{Row: j.Row, Outcome: engine.OutcomeSent, MessageID: fmt.Sprintf("%s%02d", msgID, j.Row), At: at})
	}
	if err := st.Record(ctx, res); err != nil {
		t.Fatal(err)
	}
	return st
}

// apply reconciles st with every file of the log in dir.
func apply(t *testing.T, st *store.Store, dir string) reconcile.Summary {
	t.Helper()
	ctx := context.Background()
	rc, err := reconcile.New(st, reconcile.Options{CampaignID: "spring-2026", Senders: []string{sender}, MaxAttempts: 3})
	if err != nil {
		t.Fatal(err)
	}
	files, err := receive.Files(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range files {
		f, err := logfile.Open(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		err = rc.Read(ctx, filepath.Base(path), smsevent.Statuses(smsevent.NewReader(f)))
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	sum, err := rc.Finish(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return sum
}
