package smssandbox

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestDescribeOptedOutNumbersPaging(t *testing.T) {
	var phones []string
	for i := range 250 {
		phones = append(phones, fmt.Sprintf("+1206555%04d", i))
	}
	phones = append(phones, "12065550000") // a duplicate, without its '+'
	c := newClock()
	s := New(Config{Now: c.Now, OptOuts: map[string][]string{"Promos": phones}})
	defer s.Close()

	for _, tc := range []struct {
		name  string
		max   any // MaxResults, nil to leave it out
		pages []int
	}{
		{"AWS's maximum of 100 by default", nil, []int{100, 100, 50}},
		{"MaxResults 100", 100, []int{100, 100, 50}},
		{"MaxResults 90", 90, []int{90, 90, 70}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			var sizes []int
			req := map[string]any{"OptOutListName": "Promos"}
			if tc.max != nil {
				req["MaxResults"] = tc.max
			}
			for range 10 {
				a := call(s, "DescribeOptedOutNumbers", req)
				if a.status != 200 {
					t.Fatalf("%v", a)
				}
				var out struct {
					OptOutListArn, OptOutListName string
					OptedOutNumbers               []struct {
						OptedOutNumber    string
						OptedOutTimestamp json.Number
						EndUserOptedOut   bool
					}
					NextToken *string
				}
				if err := json.Unmarshal(a.body, &out); err != nil {
					t.Fatal(err)
				}
				if out.OptOutListName != "Promos" || out.OptOutListArn != "arn:aws:sms-voice:eu-west-1:111122223333:opt-out-list/Promos" {
					t.Errorf("list %q, ARN %q", out.OptOutListName, out.OptOutListArn)
				}
				sizes = append(sizes, len(out.OptedOutNumbers))
				for _, n := range out.OptedOutNumbers {
					// Epoch seconds as a JSON number, as the SDK parses it.
					if ts, err := n.OptedOutTimestamp.Int64(); err != nil || ts != t0.Unix() || !n.EndUserOptedOut {
						t.Errorf("entry %+v", n)
					}
					got = append(got, n.OptedOutNumber)
				}
				if out.NextToken == nil {
					break
				}
				req["NextToken"] = *out.NextToken
			}
			if !slices.Equal(sizes, tc.pages) {
				t.Errorf("page sizes %v, want %v", sizes, tc.pages)
			}
			if !slices.Equal(got, phones[:250]) {
				t.Errorf("got %d numbers, want the 250 in order, once each", len(got))
			}
		})
	}
}

func TestDescribeOptedOutNumbers(t *testing.T) {
	s := New(Config{OptOuts: map[string][]string{"Promos": {"+12065551999", "+447700900123"}}})
	defer s.Close()
	for _, tc := range []struct {
		name   string
		req    map[string]any
		want   []string // numbers, or nil for an error
		reason string   // for an error: its type/reason
	}{
		{"by name", map[string]any{"OptOutListName": "Promos"}, []string{"+12065551999", "+447700900123"}, ""},
		{"by ARN", map[string]any{"OptOutListName": "arn:aws:sms-voice:us-east-1:111122223333:opt-out-list/Promos"}, []string{"+12065551999", "+447700900123"}, ""},
		{"the Default list exists, empty", map[string]any{"OptOutListName": "Default"}, []string{}, ""},
		{"asking for numbers", map[string]any{"OptOutListName": "Promos", "OptedOutNumbers": []string{"+447700900123", "+33612345678"}}, []string{"+447700900123"}, ""},
		{"filter end-user-opted-out true", map[string]any{"OptOutListName": "Promos", "Filters": []filter{{"end-user-opted-out", []string{"true"}}}}, []string{"+12065551999", "+447700900123"}, ""},
		{"filter end-user-opted-out false", map[string]any{"OptOutListName": "Promos", "Filters": []filter{{"end-user-opted-out", []string{"false"}}}}, []string{}, ""},
		{"unknown list", map[string]any{"OptOutListName": "Nope"}, nil, "ResourceNotFoundException/opt-out-list"},
		{"no list", map[string]any{}, nil, "ValidationException/MISSING_PARAMETER"},
		{"unknown filter", map[string]any{"OptOutListName": "Promos", "Filters": []filter{{"country", []string{"US"}}}}, nil, "ValidationException/FIELD_VALIDATION_FAILED"},
		{"MaxResults 0", map[string]any{"OptOutListName": "Promos", "MaxResults": 0}, nil, "ValidationException/FIELD_VALIDATION_FAILED"},
		{"MaxResults 101", map[string]any{"OptOutListName": "Promos", "MaxResults": 101}, nil, "ValidationException/FIELD_VALIDATION_FAILED"},
		{"made-up token", map[string]any{"OptOutListName": "Promos", "NextToken": "eyJvIjoxfQ"}, nil, "ValidationException/INVALID_NEXT_TOKEN"},
		{"six numbers", map[string]any{"OptOutListName": "Promos", "OptedOutNumbers": []string{"+1", "+2", "+3", "+4", "+5", "+6"}}, nil, "ValidationException/FIELD_VALIDATION_FAILED"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := call(s, "DescribeOptedOutNumbers", tc.req)
			if tc.want == nil {
				if got := a.typ + "/" + a.reason + a.resType; got != tc.reason {
					t.Errorf("%v: want %s", a, tc.reason)
				}
				return
			}
			var out struct {
				OptedOutNumbers []struct{ OptedOutNumber string }
			}
			json.Unmarshal(a.body, &out)
			var got []string
			for _, n := range out.OptedOutNumbers {
				got = append(got, n.OptedOutNumber)
			}
			if a.status != 200 || !slices.Equal(got, tc.want) && len(got)+len(tc.want) > 0 {
				t.Errorf("%v: want %v", a, tc.want)
			}
		})
	}
	// A token is good for the list it came from only.
	var phones []string
	for i := range 5 {
		phones = append(phones, fmt.Sprintf("+1206555%04d", i))
	}
	s2 := New(Config{OptOuts: map[string][]string{"A": phones, "B": phones}})
	defer s2.Close()
	var first struct{ NextToken string }
	json.Unmarshal(call(s2, "DescribeOptedOutNumbers", map[string]any{"OptOutListName": "A", "MaxResults": 2}).body, &first)
	if a := call(s2, "DescribeOptedOutNumbers", map[string]any{"OptOutListName": "B", "NextToken": first.NextToken}); a.reason != "INVALID_NEXT_TOKEN" {
		t.Errorf("list A's token on list B: %v", a)
	}
}

// phoneNumbers decodes DescribePhoneNumbers' answer.
type phoneNumbers struct {
	PhoneNumbers []map[string]any
	NextToken    *string
}

func TestDescribePhoneNumbers(t *testing.T) {
	cfg := Config{
		Numbers: []Number{
			{ID: "phone-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", PhoneNumber: "+12065550100", OptOutList: "Promos"},
			{PhoneNumber: "+18885550100", Type: "TOLL_FREE", MPS: 3},
			{PhoneNumber: "+447700900100", Type: "LONG_CODE"},
		},
		Pools: []Pool{{ID: "pool-bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", Numbers: []string{"+447700900100"}}},
	}
	s := New(cfg)
	defer s.Close()
	tollFree := s.numbers[1].ID

	t.Run("by ID", func(t *testing.T) {
		a := call(s, "DescribePhoneNumbers", map[string]any{"PhoneNumberIds": []string{"phone-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}})
		var out phoneNumbers
		if err := json.Unmarshal(a.body, &out); err != nil || a.status != 200 || len(out.PhoneNumbers) != 1 {
			t.Fatalf("%v", a)
		}
		want := map[string]any{
			"PhoneNumberArn":              "arn:aws:sms-voice:eu-west-1:111122223333:phone-number/phone-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
			"PhoneNumberId":               "phone-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
			"PhoneNumber":                 "+12065550100",
			"Status":                      "ACTIVE",
			"IsoCountryCode":              "US",
			"MessageType":                 "TRANSACTIONAL",
			"NumberCapabilities":          []any{"SMS"},
			"NumberType":                  "TEN_DLC",
			"MonthlyLeasingPrice":         "2.00",
			"TwoWayEnabled":               false,
			"SelfManagedOptOutsEnabled":   false,
			"OptOutListName":              "Promos",
			"InternationalSendingEnabled": false,
			"DeletionProtectionEnabled":   false,
			"CreatedTimestamp":            float64(s.start.Unix()),
		}
		got := out.PhoneNumbers[0]
		for k, v := range want {
			if fmt.Sprint(got[k]) != fmt.Sprint(v) {
				t.Errorf("%s = %v, want %v", k, got[k], v)
			}
		}
		if len(got) != len(want) {
			t.Errorf("%d members, want %d: %v", len(got), len(want), got)
		}
	})
	for _, tc := range []struct {
		name string
		req  map[string]any
		want []string // PhoneNumber of each, in order; nil for an error
		err  string   // type/reason/resource type and id
	}{
		{"by ARN", map[string]any{"PhoneNumberIds": []string{"arn:aws:sms-voice:us-west-2:111122223333:phone-number/" + tollFree}}, []string{"+18885550100"}, ""},
		{"two IDs", map[string]any{"PhoneNumberIds": []string{tollFree, "phone-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}}, []string{"+18885550100", "+12065550100"}, ""},
		{"all", map[string]any{}, []string{"+12065550100", "+18885550100", "+447700900100"}, ""},
		{"owned", map[string]any{"Owner": "SELF"}, []string{"+12065550100", "+18885550100", "+447700900100"}, ""},
		{"shared with the account: none", map[string]any{"Owner": "SHARED"}, []string{}, ""},
		{"a page", map[string]any{"MaxResults": 2}, []string{"+12065550100", "+18885550100"}, ""},
		{"by number type", map[string]any{"Filters": []filter{{"number-type", []string{"TOLL_FREE", "LONG_CODE"}}}}, []string{"+18885550100", "+447700900100"}, ""},
		{"by country and list", map[string]any{"Filters": []filter{{"iso-country-code", []string{"US"}}, {"opt-out-list-name", []string{"Default"}}}}, []string{"+18885550100"}, ""},
		{"unknown ID", map[string]any{"PhoneNumberIds": []string{"phone-cccccccccccccccccccccccccccccccc"}}, nil,
			"ResourceNotFoundException//phone-number/phone-cccccccccccccccccccccccccccccccc"},
		{"a phone number is no ID", map[string]any{"PhoneNumberIds": []string{"+12065550100"}}, nil, "ValidationException/FIELD_VALIDATION_FAILED//"},
		{"IDs and Owner", map[string]any{"PhoneNumberIds": []string{tollFree}, "Owner": "SELF"}, nil, "ValidationException/PARAMETERS_CANNOT_BE_USED_TOGETHER//"},
		{"unknown filter", map[string]any{"Filters": []filter{{"phone-number", []string{"+12065550100"}}}}, nil, "ValidationException/FIELD_VALIDATION_FAILED//"},
		{"filter without values", map[string]any{"Filters": []filter{{"status", nil}}}, nil, "ValidationException/FIELD_VALIDATION_FAILED//"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := call(s, "DescribePhoneNumbers", tc.req)
			if tc.want == nil {
				if got := a.typ + "/" + a.reason + "/" + a.resType + "/" + a.resID; got != tc.err {
					t.Errorf("%v: got %s, want %s", a, got, tc.err)
				}
				return
			}
			var out phoneNumbers
			json.Unmarshal(a.body, &out)
			got := []string{}
			for _, n := range out.PhoneNumbers {
				got = append(got, n["PhoneNumber"].(string))
			}
			if a.status != 200 || !slices.Equal(got, tc.want) {
				t.Errorf("%v: got %v, want %v", a, got, tc.want)
			}
		})
	}
	t.Run("pool member", func(t *testing.T) {
		var out phoneNumbers
		json.Unmarshal(call(s, "DescribePhoneNumbers", map[string]any{"Filters": []filter{{"number-type", []string{"LONG_CODE"}}}}).body, &out)
		if len(out.PhoneNumbers) != 1 || out.PhoneNumbers[0]["PoolId"] != "pool-bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb" || out.PhoneNumbers[0]["IsoCountryCode"] != "GB" {
			t.Errorf("%v", out.PhoneNumbers)
		}
	})
}

func TestDescribeWithoutListedNumbers(t *testing.T) {
	s := New(Config{})
	defer s.Close()
	// Any identity is taken, so a preflight's lookup by ID is answered.
	var out phoneNumbers
	a := call(s, "DescribePhoneNumbers", map[string]any{"PhoneNumberIds": []string{"phone-dddddddddddddddddddddddddddddddd"}})
	if err := json.Unmarshal(a.body, &out); err != nil || len(out.PhoneNumbers) != 1 ||
		out.PhoneNumbers[0]["OptOutListName"] != "Default" || out.PhoneNumbers[0]["NumberType"] != "TEN_DLC" {
		t.Errorf("%v", a)
	}
	if a := call(s, "DescribePhoneNumbers", map[string]any{}); string(a.body) != `{"PhoneNumbers":[]}` {
		t.Errorf("listing: %v", a)
	}
	var pools struct{ Pools []poolInfo }
	a = call(s, "DescribePools", map[string]any{"PoolIds": []string{"pool-eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee"}})
	if err := json.Unmarshal(a.body, &pools); err != nil || len(pools.Pools) != 1 || pools.Pools[0].OptOutListName != "Default" {
		t.Errorf("%v", a)
	}
}

func TestDescribePools(t *testing.T) {
	s := New(Config{
		Numbers: []Number{{PhoneNumber: "+12065550100"}},
		Pools: []Pool{
			{ID: "pool-11111111111111111111111111111111", OptOutList: "Promos", Numbers: []string{"+12065550100"}},
			{ID: "pool-22222222222222222222222222222222"},
		},
	})
	defer s.Close()
	a := call(s, "DescribePools", map[string]any{"PoolIds": []string{"arn:aws:sms-voice:eu-west-1:111122223333:pool/pool-11111111111111111111111111111111"}})
	var out struct{ Pools []map[string]any }
	if err := json.Unmarshal(a.body, &out); err != nil || a.status != 200 || len(out.Pools) != 1 {
		t.Fatalf("%v", a)
	}
	p := out.Pools[0]
	for k, v := range map[string]any{
		"PoolArn": "arn:aws:sms-voice:eu-west-1:111122223333:pool/pool-11111111111111111111111111111111",
		"PoolId":  "pool-11111111111111111111111111111111", "Status": "ACTIVE", "MessageType": "TRANSACTIONAL",
		"OptOutListName": "Promos", "SharedRoutesEnabled": false, "TwoWayEnabled": false,
		"SelfManagedOptOutsEnabled": false, "DeletionProtectionEnabled": false, "CreatedTimestamp": float64(s.start.Unix()),
	} {
		if fmt.Sprint(p[k]) != fmt.Sprint(v) {
			t.Errorf("%s = %v, want %v", k, p[k], v)
		}
	}
	if a := call(s, "DescribePools", map[string]any{"Filters": []filter{{"opt-out-list-name", []string{"Default"}}}}); !json.Valid(a.body) ||
		!strings.Contains(string(a.body), "pool-22222222222222222222222222222222") || strings.Contains(string(a.body), "pool-1111") {
		t.Errorf("filtered: %v", a)
	}
	if a := call(s, "DescribePools", map[string]any{"PoolIds": []string{"pool-33333333333333333333333333333333"}}); a.typ != "ResourceNotFoundException" || a.resType != "pool" {
		t.Errorf("unknown pool: %v", a)
	}
}
