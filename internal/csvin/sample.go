package csvin

import "strconv"

// SampleCount is the number of distinct numbers SampleNumber returns.
const SampleCount = 4 * usSampleLines * (len(usAreaCodes) / 3)

// SampleNumber returns the i-th of a deterministic family of distinct,
// valid E.164 mobile numbers (0 <= i < SampleCount), for the demo and test
// CSV generators and the sandbox. It panics for any other i, like a slice
// index.
//
// The numbers cycle through four countries so that any run of them has a
// mix: i%4 == 0 is the United States, 1 the United Kingdom, 2 Brazil and 3
// India. Within a country the i/4-th number walks the prefixes below before
// the subscriber digits, so small families spread over many area codes.
//
// Only some are fictional: the US numbers SampleNumber(4*k) for k < 35,600
// are +1 NXX 555-0100 to 555-0199, reserved for films and books in every
// area code. phonenumbers rejects the UK's drama range (07700 900xxx) as
// invalid, and Brazil and India have none, so the other numbers are ordinary
// mobile numbers that may well be in service. Send to them only through the
// sandbox.
func SampleNumber(i int) string {
	if i < 0 || i >= SampleCount {
		panic("csvin: SampleNumber(" + strconv.Itoa(i) + ") out of range")
	}
	j := i / 4
	var b []byte
	switch i % 4 {
	case 0:
		// +1 AAA 555 LLLL: LLLL from 0100, so the first 100 per area code
		// are the fictional 555-0100 to 555-0199.
		n := len(usAreaCodes) / 3
		k := j % n
		b = append(b, "+1"...)
		b = append(b, usAreaCodes[3*k:3*k+3]...)
		b = append(b, "555"...)
		b = appendPadded(b, 100+j/n, 4)
	case 1:
		b = sampleAppend(b, "+44", gbSamplePrefixes, j, 6) // +44 74xx xxxxxx
	case 2:
		b = sampleAppend(b, "+55", brSamplePrefixes, j, 7) // +55 11 9xxxx xxxx
	case 3:
		b = sampleAppend(b, "+91", inSamplePrefixes, j, 6) // +91 98xx xxxxxx
	}
	return string(b)
}

// usSampleLines is how many line numbers per area code SampleNumber uses:
// 0100 to 9999.
const usSampleLines = 9900

// usAreaCodes are the US area codes (three digits each) for which
// phonenumbers accepts every number NXX-555-XXXX.
const usAreaCodes = "" +
	"201202203205206207208209210212213214215216217218" +
	"219220223224225227228229231234235239240248251252" +
	"253254256260262267269270272276279281283301302303" +
	"304305307308309310312313314315316317318319320321" +
	"323324325326327329330331332334336337339341346347" +
	"350351352353360361363364369380385386401402404405" +
	"406407408409410412413414415417419423424425430432" +
	"434435440442443445447448458463464469470475478479" +
	"480484501502503504505507508509510512513515516517" +
	"518520530531534539540541551557559561562563564567" +
	"570571572573574575580582585586601602603605606607" +
	"608609610612614615616617618619620623626628629630" +
	"631636640641645646650651656657659660661662667669" +
	"678680681682686689701702703704706707708712713714" +
	"715716717718719720724725726727728730731732734737" +
	"738740743747748754757760762763765769770771772773" +
	"774775779781785786801802803804805806808810812813" +
	"814815816817818820821826828830831832835838839840" +
	"843845847848850854856857858859860862863864865870" +
	"872878901903904906907908909910912913914915916917" +
	"918919920925928929930931934936937938940941943945" +
	"947948949951952954956959970971972973975978979980" +
	"984985986989"

// The other countries' prefixes: four digits after the country code, all of
// whose numbers phonenumbers accepts as valid mobiles of that country.
var (
	gbSamplePrefixes = []string{"7400", "7401", "7402", "7403", "7404", "7405", "7406", "7407", "7408", "7409"}
	brSamplePrefixes = []string{"1195", "1196", "1197", "1198", "1199", "2195", "2196", "2197", "2198", "2199"}
	inSamplePrefixes = []string{"9800", "9801", "9802", "9803", "9804", "9805", "9806", "9807", "9808", "9809"}
)

// sampleAppend appends cc, prefixes[j%len] and j/len as width digits.
func sampleAppend(b []byte, cc string, prefixes []string, j, width int) []byte {
	b = append(b, cc...)
	b = append(b, prefixes[j%len(prefixes)]...)
	return appendPadded(b, j/len(prefixes), width)
}

func appendPadded(b []byte, n, width int) []byte {
	s := strconv.Itoa(n)
	for range width - len(s) {
		b = append(b, '0')
	}
	return append(b, s...)
}
