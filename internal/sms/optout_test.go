package sms

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
)

// account is the fake's view of an account: phone numbers on two pages,
// one pool.
func account(w http.ResponseWriter, _ *http.Request, op string, body map[string]any) {
	switch op {
	case "DescribePhoneNumbers":
		if ids, ok := body["PhoneNumberIds"].([]any); ok {
			switch ids[0] {
			case "phone-0b1", "arn:aws:sms-voice:us-east-1:111122223333:phone-number/phone-0b1":
				reply(w, 200, `{"PhoneNumbers":[{"PhoneNumberId":"phone-0b1","PhoneNumber":"+12065550101","OptOutListName":"Marketing"}]}`)
			default:
				reply(w, 400, fmt.Sprintf(`{"__type":"ResourceNotFoundException","message":"not found","ResourceType":"phone-number","ResourceId":%q}`, ids[0]))
			}
			return
		}
		if body["NextToken"] == "p2" {
			reply(w, 200, `{"PhoneNumbers":[{"PhoneNumberId":"phone-0b2","PhoneNumber":"+12065550102","OptOutListName":"Alerts"}]}`)
			return
		}
		reply(w, 200, `{"PhoneNumbers":[{"PhoneNumberId":"phone-0b1","PhoneNumber":"+12065550101","OptOutListName":"Marketing"}],"NextToken":"p2"}`)
	case "DescribePools":
		reply(w, 200, `{"Pools":[{"PoolId":"pool-9a","OptOutListName":"PoolList"}]}`)
	default:
		reply(w, 400, `{"__type":"UnknownOperationException"}`)
	}
}

func TestOptOutList(t *testing.T) {
	f := newFake(t, account)
	c := newTestClient(t, f.srv.URL, 0)
	for _, tc := range []struct {
		name, identity string
		want           string
		ops            []string // the operations called, in order
	}{
		{"E.164 on the first page", "+12065550101", "Marketing", []string{"DescribePhoneNumbers"}},
		{"E.164 on the second page", "+12065550102", "Alerts", []string{"DescribePhoneNumbers", "DescribePhoneNumbers"}},
		{"phone-number ID", "phone-0b1", "Marketing", []string{"DescribePhoneNumbers"}},
		{"phone-number ARN", "arn:aws:sms-voice:us-east-1:111122223333:phone-number/phone-0b1", "Marketing", []string{"DescribePhoneNumbers"}},
		{"pool ID", "pool-9a", "PoolList", []string{"DescribePools"}},
		{"pool ARN", "arn:aws:sms-voice:us-east-1:111122223333:pool/pool-9a", "PoolList", []string{"DescribePools"}},
		{"sender ID", "MYBRAND", "Default", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.forget()
			got, err := c.OptOutList(context.Background(), tc.identity)
			if err != nil || got != tc.want {
				t.Fatalf("OptOutList(%q) = %q, %v, want %q", tc.identity, got, err, tc.want)
			}
			var ops []string
			for _, r := range f.requests() {
				ops = append(ops, strings.TrimPrefix(r.Target, "PinpointSMSVoiceV2."))
				switch {
				case strings.HasPrefix(tc.identity, "+"):
					if _, ok := r.Body["PhoneNumberIds"]; ok {
						t.Errorf("E.164 sent as a PhoneNumberId: %v", r.Body)
					}
				case strings.Contains(tc.identity, "phone-"):
					if ids, _ := r.Body["PhoneNumberIds"].([]any); len(ids) != 1 || ids[0] != tc.identity {
						t.Errorf("PhoneNumberIds = %v, want [%s]", r.Body["PhoneNumberIds"], tc.identity)
					}
				case strings.Contains(tc.identity, "pool-"):
					if ids, _ := r.Body["PoolIds"].([]any); len(ids) != 1 || ids[0] != tc.identity {
						t.Errorf("PoolIds = %v, want [%s]", r.Body["PoolIds"], tc.identity)
					}
				}
			}
			if !slices.Equal(ops, tc.ops) {
				t.Errorf("operations %q, want %q", ops, tc.ops)
			}
		})
	}
}

func TestOptOutListUnknown(t *testing.T) {
	f := newFake(t, account)
	c := newTestClient(t, f.srv.URL, 0)

	_, err := c.OptOutList(context.Background(), "+12065550199")
	var ie *IdentityError
	if !errors.As(err, &ie) || ie.Identity != "+12065550199" || ie.Region != "us-east-1" || !strings.Contains(ie.Hint(), "{from}") {
		t.Fatalf("unknown E.164: err = %v, want an *IdentityError naming it and the region", err)
	}

	_, err = c.OptOutList(context.Background(), "phone-nope")
	var api *APIError
	if !errors.As(err, &api) || api.Type != "ResourceNotFoundException" || !strings.HasPrefix(api.Hint(), "phone-number phone-nope: ") {
		t.Fatalf("unknown ID: err = %v, want the ResourceNotFoundException with its hint", err)
	}
}

// optOutPages serves an opt-out list of five numbers on three pages.
func optOutPages(w http.ResponseWriter, _ *http.Request, op string, body map[string]any) {
	if op != "DescribeOptedOutNumbers" || body["OptOutListName"] != "Marketing" {
		reply(w, 400, `{"__type":"ResourceNotFoundException","ResourceType":"opt-out-list","ResourceId":"?"}`)
		return
	}
	switch body["NextToken"] {
	case nil:
		reply(w, 200, `{"OptOutListName":"Marketing","OptedOutNumbers":[{"OptedOutNumber":"+447700900001","EndUserOptedOut":true},{"OptedOutNumber":"+447700900002"}],"NextToken":"t2"}`)
	case "t2":
		reply(w, 200, `{"OptOutListName":"Marketing","OptedOutNumbers":[{"OptedOutNumber":"+447700900003"}],"NextToken":"t3"}`)
	case "t3":
		reply(w, 200, `{"OptOutListName":"Marketing","OptedOutNumbers":[{"OptedOutNumber":"+447700900004"},{"OptedOutNumber":"+447700900005"}]}`)
	default:
		reply(w, 400, `{"__type":"ValidationException","Reason":"INVALID_NEXT_TOKEN"}`)
	}
}

func TestOptedOutPages(t *testing.T) {
	f := newFake(t, optOutPages)
	c := newTestClient(t, f.srv.URL, 0)
	var got []string
	err := c.OptedOut(context.Background(), "Marketing", func(p string) error {
		got = append(got, p)
		return nil
	})
	want := []string{"+447700900001", "+447700900002", "+447700900003", "+447700900004", "+447700900005"}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("OptedOut = %q, %v, want %q", got, err, want)
	}
	var tokens []any
	for _, r := range f.requests() {
		tokens = append(tokens, r.Body["NextToken"])
	}
	if !slices.Equal(tokens, []any{nil, "t2", "t3"}) {
		t.Fatalf("NextTokens sent %v, want [<nil> t2 t3]", tokens)
	}
}

func TestOptedOutStopsAtCallbackError(t *testing.T) {
	f := newFake(t, optOutPages)
	c := newTestClient(t, f.srv.URL, 0)
	stop := errors.New("disk full")
	n := 0
	err := c.OptedOut(context.Background(), "Marketing", func(string) error {
		if n++; n == 3 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || n != 3 || len(f.requests()) != 2 {
		t.Fatalf("err %v after %d numbers and %d pages, want the callback's error at the third number, on page 2", err, n, len(f.requests()))
	}
}

// TestOptedOutRetriesReads: Describe calls are idempotent, so the SDK
// retries them (unlike sends): a throttle in the middle of a long list
// does not fail the preflight.
func TestOptedOutRetriesReads(t *testing.T) {
	var throttled atomic.Bool
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, op string, body map[string]any) {
		if body["NextToken"] == "t2" && throttled.CompareAndSwap(false, true) {
			reply(w, 400, `{"__type":"ThrottlingException","message":"Rate exceeded"}`)
			return
		}
		optOutPages(w, r, op, body)
	})
	c := newTestClient(t, f.srv.URL, 0)
	n := 0
	if err := c.OptedOut(context.Background(), "Marketing", func(string) error { n++; return nil }); err != nil || n != 5 {
		t.Fatalf("OptedOut = %v after %d numbers, want 5 and no error", err, n)
	}
	if got := len(f.requests()); got != 4 {
		t.Fatalf("%d requests, want 4 (three pages, one retried)", got)
	}
}

func TestOptedOutErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		list    string
		handler func(w http.ResponseWriter, r *http.Request, op string, body map[string]any)
		check   func(error) bool
	}{
		{"unknown list", "Nope", optOutPages, func(err error) bool {
			var api *APIError
			return errors.As(err, &api) && api.Type == "ResourceNotFoundException" && strings.Contains(api.Hint(), "opt-out list")
		}},
		{"a token that repeats", "Marketing", func(w http.ResponseWriter, _ *http.Request, _ string, _ map[string]any) {
			reply(w, 200, `{"OptedOutNumbers":[{"OptedOutNumber":"+447700900001"}],"NextToken":"same"}`)
		}, func(err error) bool { return err != nil && strings.Contains(err.Error(), "NextToken") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, tc.handler)
			c := newTestClient(t, f.srv.URL, 0)
			err := c.OptedOut(context.Background(), tc.list, func(string) error { return nil })
			if !tc.check(err) {
				t.Fatalf("err = %v", err)
			}
		})
	}
}
