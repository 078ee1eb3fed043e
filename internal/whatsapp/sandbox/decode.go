package sandbox

import (
	"bytes"
	"encoding/json"
)

// decodeSend decodes a send request's body into req as json.Unmarshal
// would, without reflection: encoding/json cost a sandbox serving 10,000
// sends a second an eighth of its CPU. It takes the usual shape only, and
// reports false for anything else — an escape or a byte outside ASCII in a
// key or a string it keeps, a null or another type than the field's, a field
// given twice or in another case, nesting deeper than maxDecodeDepth, invalid
// JSON — leaving req partly filled: the caller then decodes with
// json.Unmarshal, whose result and error messages stand. FuzzDecodeSend
// checks that whatever it takes, it decodes as json.Unmarshal does.
//
// Raw values are slices of body, which req keeps alive; strings are copies,
// as the sandbox keeps some (callback data, recipients) for long.
func decodeSend(body []byte, req *sendRequest) bool {
	d := sendDecoder{b: body}
	if !d.object(d.sendField(req)) {
		return false
	}
	d.space()
	return d.i == len(d.b)
}

// maxDecodeDepth bounds the nesting decodeSend skips over.
const maxDecodeDepth = 64

// sendDecoder reads one JSON value at a time from b.
type sendDecoder struct {
	b     []byte
	i     int
	depth int
}

// The keys of each object decodeSend fills, in the order of their bits
// in a seen-set.
var (
	sendKeys      = []string{"messaging_product", "recipient_type", "to", "type", "biz_opaque_callback_data", "template", "product_policy", "message_activity_sharing"}
	templateKeys  = []string{"name", "language", "components"}
	languageKeys  = []string{"code", "policy"}
	componentKeys = []string{"type", "sub_type", "index", "parameters"}
)

// field decodes the value of key, whose index in the object's keys is k
// (-1 for a key json.Unmarshal ignores); false stops the decoding.
type field func(k int) bool

func (d *sendDecoder) sendField(req *sendRequest) (keys []string, f field) {
	return sendKeys, func(k int) bool {
		switch k {
		case 0:
			return d.str(&req.MessagingProduct)
		case 1:
			return d.str(&req.RecipientType)
		case 2:
			return d.str(&req.To)
		case 3:
			return d.str(&req.Type)
		case 4:
			return d.str(&req.BizOpaqueCallbackData)
		case 5:
			req.Template = &templateObject{}
			return d.object(d.templateField(req.Template))
		case 6:
			return d.raw(&req.RawProductPolicy)
		case 7:
			return d.raw(&req.RawMessageActivitySharing)
		}
		return d.skip()
	}
}

func (d *sendDecoder) templateField(t *templateObject) ([]string, field) {
	return templateKeys, func(k int) bool {
		switch k {
		case 0:
			return d.str(&t.Name)
		case 1:
			t.Language = &struct {
				Code   string `json:"code"`
				Policy string `json:"policy"`
			}{}
			return d.object(languageKeys, func(k int) bool {
				switch k {
				case 0:
					return d.str(&t.Language.Code)
				case 1:
					return d.str(&t.Language.Policy)
				}
				return d.skip()
			})
		case 2:
			t.Components = make([]sendComponent, 0, 4) // header, body, buttons: grown once at most
			return d.array(func() bool {
				t.Components = append(t.Components, sendComponent{})
				return d.object(d.componentField(&t.Components[len(t.Components)-1]))
			})
		}
		return d.skip()
	}
}

func (d *sendDecoder) componentField(c *sendComponent) ([]string, field) {
	return componentKeys, func(k int) bool {
		switch k {
		case 0:
			return d.str(&c.Type)
		case 1:
			return d.raw(&c.SubType)
		case 2:
			return d.raw(&c.Index)
		case 3:
			c.Parameters = make([]json.RawMessage, 0, 4)
			return d.array(func() bool {
				c.Parameters = append(c.Parameters, nil)
				return d.raw(&c.Parameters[len(c.Parameters)-1])
			})
		}
		return d.skip()
	}
}

func (d *sendDecoder) space() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// next skips white space and reports whether the next byte is c,
// consuming it if so.
func (d *sendDecoder) next(c byte) bool {
	d.space()
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

// object reads an object whose keys are keys (others ignored), calling f
// for each member's value.
func (d *sendDecoder) object(keys []string, f field) bool {
	if !d.next('{') {
		return false
	}
	if d.next('}') {
		return true
	}
	var seen uint
	for {
		key, ok := d.plain()
		if !ok || !d.next(':') {
			return false
		}
		k := -1
		for j, want := range keys {
			if string(key) == want {
				k = j
				break
			}
			if equalFoldASCII(key, want) {
				return false // json.Unmarshal takes it for want
			}
		}
		if k >= 0 {
			if seen&(1<<k) != 0 {
				return false // json.Unmarshal merges or overwrites
			}
			seen |= 1 << k
		}
		if !f(k) {
			return false
		}
		if d.next('}') {
			return true
		}
		if !d.next(',') {
			return false
		}
	}
}

// array reads an array, calling elem for each element.
func (d *sendDecoder) array(elem func() bool) bool {
	if !d.next('[') {
		return false
	}
	if d.next(']') {
		return true
	}
	for {
		if !elem() {
			return false
		}
		if d.next(']') {
			return true
		}
		if !d.next(',') {
			return false
		}
	}
}

// str reads a string of printable ASCII without escapes into v.
func (d *sendDecoder) str(v *string) bool {
	b, ok := d.plain()
	if ok {
		*v = constant(b)
	}
	return ok
}

// plain reads a string of printable ASCII without escapes and returns
// what is between its quotes.
func (d *sendDecoder) plain() ([]byte, bool) {
	if !d.next('"') {
		return nil, false
	}
	start := d.i
	for ; d.i < len(d.b); d.i++ {
		switch c := d.b[d.i]; {
		case c == '"':
			d.i++
			return d.b[start : d.i-1], true
		case c < 0x20 || c == '\\' || c >= 0x80:
			return nil, false
		}
	}
	return nil, false
}

// equalFoldASCII is strings.EqualFold for an ASCII key.
func equalFoldASCII(key []byte, s string) bool {
	if len(key) != len(s) {
		return false
	}
	for i, c := range key {
		if lower(c) != lower(s[i]) {
			return false
		}
	}
	return true
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// constant is string(b), without a copy for the values every send repeats.
func constant(b []byte) string {
	switch string(b) {
	case "whatsapp":
		return "whatsapp"
	case "individual":
		return "individual"
	case "template":
		return "template"
	case "deterministic":
		return "deterministic"
	case "header":
		return "header"
	case "body":
		return "body"
	case "button":
		return "button"
	}
	return string(b)
}

// raw reads any value into v, as its bytes.
func (d *sendDecoder) raw(v *json.RawMessage) bool {
	d.space()
	start := d.i
	if !d.skip() {
		return false
	}
	*v = d.b[start:d.i:d.i]
	return true
}

// skip reads any value, checking its syntax.
func (d *sendDecoder) skip() bool {
	d.space()
	if d.i == len(d.b) {
		return false
	}
	switch c := d.b[d.i]; {
	case c == '{', c == '[':
		if d.depth++; d.depth > maxDecodeDepth {
			return false
		}
		var ok bool
		if c == '{' {
			ok = d.object(nil, func(int) bool { return d.skip() })
		} else {
			ok = d.array(d.skip)
		}
		d.depth--
		return ok
	case c == '"':
		return d.skipString()
	case c == '-' || ('0' <= c && c <= '9'):
		return d.skipNumber()
	}
	for _, lit := range []string{"true", "false", "null"} {
		if bytes.HasPrefix(d.b[d.i:], []byte(lit)) {
			d.i += len(lit)
			return true
		}
	}
	return false
}

// skipString reads a string, any escapes in it valid.
func (d *sendDecoder) skipString() bool {
	d.i++ // the opening quote
	for d.i < len(d.b) {
		c := d.b[d.i]
		d.i++
		switch {
		case c == '"':
			return true
		case c < 0x20:
			return false
		case c == '\\':
			if d.i == len(d.b) {
				return false
			}
			e := d.b[d.i]
			d.i++
			switch e {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if d.i+4 > len(d.b) {
					return false
				}
				for _, h := range d.b[d.i : d.i+4] {
					if !isHex(h) {
						return false
					}
				}
				d.i += 4
			default:
				return false
			}
		}
	}
	return false
}

// skipNumber reads a number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (d *sendDecoder) skipNumber() bool {
	if d.b[d.i] == '-' {
		d.i++
	}
	switch {
	case d.i < len(d.b) && d.b[d.i] == '0':
		d.i++
	case !d.digits():
		return false
	}
	if d.i < len(d.b) && d.b[d.i] == '.' {
		d.i++
		if !d.digits() {
			return false
		}
	}
	if d.i < len(d.b) && (d.b[d.i] == 'e' || d.b[d.i] == 'E') {
		d.i++
		if d.i < len(d.b) && (d.b[d.i] == '+' || d.b[d.i] == '-') {
			d.i++
		}
		if !d.digits() {
			return false
		}
	}
	return true
}

// digits reads one or more digits.
func (d *sendDecoder) digits() bool {
	start := d.i
	for d.i < len(d.b) && '0' <= d.b[d.i] && d.b[d.i] <= '9' {
		d.i++
	}
	return d.i > start
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
