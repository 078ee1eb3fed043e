package csvin

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func readList(t *testing.T, l *ListReader) []step {
	t.Helper()
	var out []step
	for range 10000 {
		phone, line, err := l.Next()
		if err == io.EOF {
			if phone != "" || line != 0 {
				t.Errorf("at io.EOF Next returned %q, %d", phone, line)
			}
			return out
		}
		var le *LineError
		switch {
		case err == nil:
			out = append(out, step{phone: phone, line: line})
		case errors.As(err, &le):
			if line != le.Line || phone != "" {
				t.Errorf("Next = %q, %d, %v: line differs from the error's", phone, line, err)
			}
			out = append(out, step{errLine: le.Line, errIs: le.Err, errText: le.Error()})
		default:
			t.Fatalf("Next: unexpected error %v", err)
		}
	}
	t.Fatal("Next did not reach io.EOF")
	return nil
}

func TestListReader(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		region string
		want   []step
	}{
		{name: "empty", in: "", want: nil},
		{name: "only comments", in: "# suppression list\n\n#\n", want: nil},
		{
			name: "one number per line",
			in:   "+447400123456\n+1 202 555 0123\n447400123457\n",
			want: []step{{phone: "+447400123456", line: 1}, {phone: "+12025550123", line: 2}, {phone: "+447400123457", line: 3}},
		},
		{
			name: "comments, blank lines, CRLF and BOM",
			in:   "\ufeff# opted out\r\n\r\n+447400123456\r\n  # indented comment\r\n+447400123457 # said stop on 3 May\r\n",
			want: []step{{phone: "+447400123456", line: 3}, {phone: "+447400123457", line: 5}},
		},
		{
			name: "first field of a plain list",
			in:   "+447400123456,Ann,2024-05-03\n+447400123457\n",
			want: []step{{phone: "+447400123456", line: 1}, {phone: "+447400123457", line: 2}},
		},
		{
			name: "CSV with a header",
			in:   "name,Phone,date\nAnn,+447400123456,2024-05-03\n\"Smith, Bob\",\"+44 7400 123457\",x\n",
			want: []step{{phone: "+447400123456", line: 2}, {phone: "+447400123457", line: 3}},
		},
		{
			name: "in a CSV a leading # is data",
			in:   "# exported\norder,phone\n#123,+447400123456\n  #124,+447400123457\n",
			want: []step{{phone: "+447400123456", line: 3}, {phone: "+447400123457", line: 4}},
		},
		{
			name: "header after a comment",
			in:   "# export\nPHONE\n+447400123456\n",
			want: []step{{phone: "+447400123456", line: 3}},
		},
		{
			name: "region",
			in:   "07400 123456\n+12025550123\n", region: "GB",
			want: []step{{phone: "+447400123456", line: 1}, {phone: "+12025550123", line: 2}},
		},
		{
			name: "invalid numbers are reported and skipped",
			in:   "+447400123456\nunsubscribed\n07400 123456\n+447400123457\n",
			want: []step{
				{phone: "+447400123456", line: 1},
				{errLine: 2, errIs: ErrInvalidPhone, errText: `line 2: "unsubscribed": invalid phone number: contains letters`},
				{errLine: 3, errIs: ErrInvalidPhone, errText: "no country code"},
				{phone: "+447400123457", line: 4},
			},
		},
		{
			name: "header row missing the phone cell",
			in:   "name,phone\nAnn\nBob,\n",
			want: []step{
				{errLine: 2, errIs: ErrInvalidPhone, errText: "empty"},
				{errLine: 3, errIs: ErrInvalidPhone, errText: "empty"},
			},
		},
		{
			name: "broken quoting is reported and skipped",
			in:   "+447400123456\n+44 7400 \"123457\n+447400123458\n",
			want: []step{
				{phone: "+447400123456", line: 1},
				{errLine: 2, errText: `bare " in non-quoted-field`},
				{phone: "+447400123458", line: 3},
			},
		},
		{
			name: "invalid UTF-8 is reported and skipped",
			in:   "+447400123456\n+447400123457 # caf\xe9\n+447400123458\n",
			want: []step{
				{phone: "+447400123456", line: 1},
				{errLine: 2, errIs: ErrInvalidUTF8},
				{phone: "+447400123458", line: 3},
			},
		},
		{
			name: "semicolon CSV, as Excel writes in much of Europe",
			in:   "Name;Phone;Betrag\r\n\"Smith; Ann\";+44 7400 123456;1,50\r\nBob;447400123457;2,00\r\n",
			want: []step{{phone: "+447400123456", line: 2}, {phone: "+447400123457", line: 3}},
		},
		{
			name: "UTF-16 tab-separated, as Excel's Unicode Text",
			in:   utf16Text("name\tphone\r\nZoë\t'+447400123456\r\n", false),
			want: []step{{phone: "+447400123456", line: 2}},
		},
		{
			name: "apostrophes from a web app's export",
			in:   "'+447400123456\n'07400 123457\n",
			want: []step{{phone: "+447400123456", line: 1}, {errLine: 2, errIs: ErrInvalidPhone, errText: `line 2: "'07400 123457": invalid phone number: no country code`}},
		},
		{
			name: "plain list, numbers followed by other delimiters",
			in:   "+447400123456;Ann\n+447400123457,Bob\n+447400123458\tCy\n",
			want: []step{{phone: "+447400123456", line: 1}, {phone: "+447400123457", line: 2}, {phone: "+447400123458", line: 3}},
		},
		{
			name: "semicolons in a comment do not pick the delimiter",
			in:   "# opt-outs; from the shop\n+447400123456 # said stop; twice\n+447400123457,Bob\n",
			want: []step{{phone: "+447400123456", line: 2}, {phone: "+447400123457", line: 3}},
		},
		{
			name: "two phone columns",
			in:   "phone,Phone\n+447400123456,+447400123457\n",
			want: []step{
				{errLine: 1, errIs: ErrDuplicateColumn},
				{phone: "+447400123456", line: 2},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := readList(t, NewListReader(strings.NewReader(tt.in), tt.region))
			compareSteps(t, got, tt.want)
			for _, s := range got {
				if s.errLine != 0 && errors.Is(s.errIs, ErrInvalidPhone) != errors.Is(findWant(tt.want, s.errLine), ErrInvalidPhone) {
					t.Errorf("line %d: ErrInvalidPhone = %v, want the opposite", s.errLine, errors.Is(s.errIs, ErrInvalidPhone))
				}
			}
		})
	}
}

func findWant(want []step, line int) error {
	for _, s := range want {
		if s.errLine == line {
			return s.errIs
		}
	}
	return nil
}

func TestListReaderFinalErrors(t *testing.T) {
	t.Run("unknown region", func(t *testing.T) {
		l := NewListReader(strings.NewReader("+447400123456\n"), "XX")
		for range 2 {
			if _, _, err := l.Next(); !errors.Is(err, ErrUnknownRegion) {
				t.Fatalf("Next = %v, want ErrUnknownRegion every time", err)
			}
		}
	})
	t.Run("read error", func(t *testing.T) {
		boom := errors.New("boom")
		l := NewListReader(io.MultiReader(strings.NewReader("+447400123456\n"), iotest.ErrReader(boom)), "")
		if phone, line, err := l.Next(); phone != "+447400123456" || line != 1 || err != nil {
			t.Fatalf("Next = %q, %d, %v", phone, line, err)
		}
		for range 2 {
			if _, _, err := l.Next(); !errors.Is(err, boom) {
				t.Fatalf("Next = %v, want %v every time", err, boom)
			}
		}
	})
}
