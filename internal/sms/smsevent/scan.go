package smsevent

// scanner finds where a JSON value ends, or the byte where it stops being
// JSON, exactly as encoding/json's scanner does (its nesting limit
// included), reading the value a piece at a time and keeping nothing of it.
// The Reader used to hand records to a json.Decoder to learn the same; but a
// Decoder reads ahead of where a broken record breaks, so that a log of
// broken records (a run of '{') cost a buffer's worth of reading per byte.
// FuzzScanner holds the two to agreeing.
//
// The zero value is ready to scan a value from its first byte.
type scanner struct {
	state scanState
	stack []byte // what each open bracket expects next: inKey, inValue or inArray
	lit   string // the rest of the literal (true, false, null) being read
	hex   int    // hex digits still to come in a \u escape
}

type scanState uint8

const (
	scanValue        scanState = iota // a value: before it, blanks
	scanValueOrClose                  // after '[': a value or ']'
	scanKeyOrClose                    // after '{': a key or '}'
	scanKey                           // after ',' in an object: a key
	scanAfter                         // after a value: blanks, then what the open bracket expects
	scanString                        // in a string
	scanEscape                        // after a '\' in a string
	scanHex                           // in the hex digits of a \u escape
	scanMinus                         // after a number's '-'
	scanZero                          // after a number's leading '0'
	scanInt                           // in a number's whole part, after 1-9
	scanDot                           // after the decimal point
	scanFrac                          // in the fraction
	scanExp                           // after 'e' or 'E'
	scanExpSign                       // after the exponent's sign
	scanExpDigits                     // in the exponent
	scanLiteral                       // in true, false or null
)

// What an open bracket expects after a value.
const (
	inKey   byte = iota // a ':' (the value was a key)
	inValue             // a ',' or '}'
	inArray             // a ',' or ']'
)

// maxNesting is encoding/json's maxNestingDepth: one more open bracket is an
// error at that bracket.
const maxNesting = 10000

// scanResult is what scan found.
type scanResult uint8

const (
	scanMore   scanResult = iota // the value goes on past d
	scanDone                     // the value ended with d[n-1]
	scanBroken                   // d[n] is where the value stops being JSON
)

// Byte classes: blank[c] for JSON's blanks, plainString[c] for bytes that
// need no attention in a string, digit[c] for '0' to '9'.
var blank, plainString, digit [256]bool

func init() {
	for _, c := range []byte{' ', '\t', '\r', '\n'} {
		blank[c] = true
	}
	for c := 0x20; c < 0x100; c++ {
		plainString[c] = c != '"' && c != '\\'
	}
	for c := '0'; c <= '9'; c++ {
		digit[c] = true
	}
}

// scan reads d, the next bytes of the value, and returns how many it read
// and what it found.
func (s *scanner) scan(d []byte) (n int, res scanResult) {
	i := 0
	for i < len(d) {
		c := d[i]
		switch s.state {
		case scanValue, scanValueOrClose:
			if blank[c] {
				i++
				continue
			}
			if c == ']' && s.state == scanValueOrClose {
				if done := s.pop(); done {
					return i + 1, scanDone
				}
				i++
				continue
			}
			switch {
			case c == '{':
				if len(s.stack) == maxNesting {
					return i, scanBroken
				}
				s.stack = append(s.stack, inKey)
				s.state = scanKeyOrClose
			case c == '[':
				if len(s.stack) == maxNesting {
					return i, scanBroken
				}
				s.stack = append(s.stack, inArray)
				s.state = scanValueOrClose
			case c == '"':
				s.state = scanString
			case c == '-':
				s.state = scanMinus
			case c == '0':
				s.state = scanZero
			case '1' <= c && c <= '9':
				s.state = scanInt
			case c == 't':
				s.state, s.lit = scanLiteral, "rue"
			case c == 'f':
				s.state, s.lit = scanLiteral, "alse"
			case c == 'n':
				s.state, s.lit = scanLiteral, "ull"
			default:
				return i, scanBroken
			}
			i++
		case scanKeyOrClose, scanKey:
			switch {
			case blank[c]:
			case c == '"':
				s.state = scanString
			case c == '}' && s.state == scanKeyOrClose:
				if s.pop() {
					return i + 1, scanDone
				}
			default:
				return i, scanBroken
			}
			i++
		case scanAfter:
			if blank[c] {
				i++
				continue
			}
			top := &s.stack[len(s.stack)-1]
			switch {
			case *top == inKey && c == ':':
				*top, s.state = inValue, scanValue
			case *top == inValue && c == ',':
				*top, s.state = inKey, scanKey
			case *top == inArray && c == ',':
				s.state = scanValue
			case *top == inValue && c == '}', *top == inArray && c == ']':
				if s.pop() {
					return i + 1, scanDone
				}
			default:
				return i, scanBroken
			}
			i++
		case scanString:
			for i < len(d) && plainString[d[i]] {
				i++
			}
			if i == len(d) {
				break
			}
			switch d[i] {
			case '"':
				s.state = scanAfter
			case '\\':
				s.state = scanEscape
			default: // a control character
				return i, scanBroken
			}
			i++
		case scanEscape:
			switch c {
			case 'b', 'f', 'n', 'r', 't', '\\', '/', '"':
				s.state = scanString
			case 'u':
				s.state, s.hex = scanHex, 4
			default:
				return i, scanBroken
			}
			i++
		case scanHex:
			if !digit[c] && !('a' <= c && c <= 'f') && !('A' <= c && c <= 'F') {
				return i, scanBroken
			}
			if s.hex--; s.hex == 0 {
				s.state = scanString
			}
			i++
		case scanMinus:
			switch {
			case c == '0':
				s.state = scanZero
			case '1' <= c && c <= '9':
				s.state = scanInt
			default:
				return i, scanBroken
			}
			i++
		case scanInt:
			for i < len(d) && digit[d[i]] {
				i++
			}
			if i < len(d) {
				s.state = scanZero // what may follow is what may follow a 0
			}
		case scanZero:
			switch c {
			case '.':
				s.state = scanDot
				i++
			case 'e', 'E':
				s.state = scanExp
				i++
			default:
				s.state = scanAfter // c is read there
			}
		case scanDot:
			if !digit[c] {
				return i, scanBroken
			}
			s.state = scanFrac
			i++
		case scanFrac:
			for i < len(d) && digit[d[i]] {
				i++
			}
			if i == len(d) {
				break
			}
			if d[i] == 'e' || d[i] == 'E' {
				s.state = scanExp
				i++
			} else {
				s.state = scanAfter
			}
		case scanExp:
			s.state = scanExpSign
			if c == '+' || c == '-' {
				i++
			}
		case scanExpSign:
			if !digit[c] {
				return i, scanBroken
			}
			s.state = scanExpDigits
			i++
		case scanExpDigits:
			for i < len(d) && digit[d[i]] {
				i++
			}
			if i < len(d) {
				s.state = scanAfter
			}
		case scanLiteral:
			if c != s.lit[0] {
				return i, scanBroken
			}
			if s.lit = s.lit[1:]; s.lit == "" {
				s.state = scanAfter
			}
			i++
		}
	}
	return i, scanMore
}

// pop closes the innermost bracket and reports whether that ended the
// value.
func (s *scanner) pop() bool {
	s.stack = s.stack[:len(s.stack)-1]
	s.state = scanAfter
	return len(s.stack) == 0
}

// reset makes s ready for the next value, keeping its stack's memory.
func (s *scanner) reset() { *s = scanner{stack: s.stack[:0]} }
