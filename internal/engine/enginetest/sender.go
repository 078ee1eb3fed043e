package enginetest

import (
	"context"
	"errors"
	"testing"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/engine"
)

// Situation is what a sender's provider does with a send, as the
// SenderSuite tries it.
type Situation int

const (
	SendAnswered  Situation = iota // accepts it and answers: a receipt with the provider's message ID
	SendInDoubt                    // accepts it and answers too late: the send is in doubt
	SendNeverLeft                  // cannot be reached: the request never left this machine
	SendThrottled                  // refuses it for the sender's rate: retry without spending an attempt
	SendFatal                      // refuses every send (an expired token, an account stopped): stop the run
)

func (s Situation) String() string {
	return [...]string{"answered", "in doubt", "never left", "throttled", "fatal"}[s]
}

// SenderHarness makes, for each situation, a sender whose provider (a
// sandbox) answers so, and the message to send through it; the harness
// undoes what it set up with t.Cleanup.
type SenderHarness func(t *testing.T, s Situation) (engine.Sender, campaign.Message)

// SenderSuite runs the contract every engine.Sender keeps, against a
// channel's client and its sandbox: the engine decides by the class of a
// send's error alone, so that class must say what the provider did.
func SenderSuite(t *testing.T, h SenderHarness) {
	want := map[Situation]campaign.Class{
		SendInDoubt: campaign.Unanswered, SendNeverLeft: campaign.NeverLeft,
		SendThrottled: campaign.Throttled, SendFatal: campaign.Fatal,
	}
	for _, s := range []Situation{SendAnswered, SendInDoubt, SendNeverLeft, SendThrottled, SendFatal} {
		t.Run(s.String(), func(t *testing.T) {
			sender, m := h(t, s)
			rc, err := sender.Send(context.Background(), m)
			if s == SendAnswered {
				if err != nil || rc.ID == "" {
					t.Fatalf("Send = %+v, %v; want a receipt with the provider's message ID", rc, err)
				}
				return
			}
			var se *campaign.SendError
			if !errors.As(err, &se) {
				t.Fatalf("Send = %+v, %v; want a *campaign.SendError of class %v", rc, err, want[s])
			}
			if se.Class != want[s] {
				t.Fatalf("Send's error %v is of class %v, want %v", err, se.Class, want[s])
			}
			if rc.ID != "" {
				t.Errorf("a failed send returned message ID %q", rc.ID)
			}
			if se.Title == "" {
				t.Errorf("the error of class %v has no title for reports", se.Class)
			}
		})
	}
}
