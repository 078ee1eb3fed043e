// Package smsevent reads exported AWS End User Messaging SMS event records
// (the configuration set's event destinations) and gives them to
// reconcile as statuses, the way package webhook does for WhatsApp.
//
// # Logs
//
// A log is read as a stream of records, in constant memory however large
// (logfile.Open opens it, `-` for stdin, gunzipping when it is gzip). Each
// record is detected on its own, so a log may mix these forms:
//
//   - JSON lines: one event object per line (Firehose to S3 with a newline
//     delimiter, bulksend's SMS sandbox);
//   - objects one after the other with nothing between them, `{…}{…}`
//     (Firehose's default S3 output), however the lines fall;
//   - CloudWatch Logs exports, `2026-11-30T10:00:00.000Z {…}` per line: a
//     date-time, a space, the event; also with a log stream's name between
//     them (`aws logs tail`), or without a zone;
//   - SNS notifications, `{"Type":"Notification",…,"Message":"{…}"}`, whose
//     Message string holds the event (an HTTPS subscriber's log, an SQS
//     queue's message bodies); with raw message delivery the body is the
//     event itself;
//   - EventBridge events, `{"detail-type":"Text Message Delivery Status
//     Updated","source":"aws.sms-voice",…,"detail":{…}}`, whose detail is
//     the event (a rule's SQS, Firehose or CloudWatch Logs target), also
//     as the Message of an SNS notification (a rule's SNS target);
//   - JSON arrays of events, on one line or pretty-printed.
//
// Inbound SMS messages (replies to a two-way number, which AWS publishes
// to an SNS topic) are no delivery events: Reader counts them (NotEvent,
// and Inbound of those), and ParseInbound reads one.
//
// Reader documents how records are found, numbered and skipped.
//
// # Statuses
//
// Statuses turns each event into one reconcile.Status:
//
//	reconcile.Status  event record
//	----------------  ------------------------------------------------------------
//	WAMID             messageId (required: a record without one is invalid)
//	Sender            originationPhoneNumber
//	Timestamp         eventTimestamp (Unix milliseconds; required)
//	Ref               context.bulksend ("<campaign>:<row>"), zero when absent or not bulksend's
//	                  (bulksend sends Context {"bulksend": "<campaign>:<row>"})
//	Price             Parts: totalMessageParts (0 when absent); Charge:
//	                  totalMessagePrice + totalCarrierFee, nil when neither is given
//
//	eventType                                       Status     ErrorReason
//	----------------------------------------------  ---------  -------------------
//	TEXT_DELIVERED, TEXT_SUCCESSFUL                 delivered
//	TEXT_QUEUED, TEXT_PENDING, TEXT_SENT            sent
//	TEXT_BLOCKED                                    failed     blocked
//	TEXT_CARRIER_BLOCKED                            failed     carrier_blocked
//	TEXT_SPAM                                       failed     spam
//	TEXT_PROTECT_BLOCKED                            failed     protect_blocked
//	TEXT_TTL_EXPIRED                                failed     ttl_expired
//	TEXT_CARRIER_UNREACHABLE                        failed     carrier_unreachable
//	TEXT_UNREACHABLE                                failed     unreachable
//	TEXT_INVALID                                    failed     invalid
//	TEXT_INVALID_MESSAGE                            failed     invalid_message
//	TEXT_UNKNOWN with isFinal true                  failed     unknown
//	TEXT_UNKNOWN without isFinal                    sent
//	any other TEXT_…                                sent
//	VOICE_…, MEDIA_…, RCS_…, anything else          not an event (counted NotEvent)
//
// A failed status has ErrorCode 0 and ErrorTitle the event type, followed
// by ": " and messageStatusDescription when there is one
// ("TEXT_CARRIER_UNREACHABLE: Carrier unreachable").
//
// Every event of a message proves it reached AWS, so a type this package
// does not know is "sent": the bottom of reconcile's order among statuses,
// it settles a row in doubt and never hides a later delivered or failed.
// A failure that is not final (AWS may report one and deliver later) is
// still failed: reconcile's order puts delivered above failed, so the
// later event wins whatever order the log has.
package smsevent

import "time"

// MaxRecord is the longest record a Reader decodes, in bytes. An AWS SMS
// event is under 2 KB, twice that wrapped in an SNS notification; a longer
// record is counted invalid and skipped, its bytes scanned but not kept.
const MaxRecord = 1 << 20

// keepFirst is how many line numbers Counts.FirstInvalid keeps.
const keepFirst = 5

// Event is one SMS event record. Strings are "" and numbers 0 when the
// record does not have them.
type Event struct {
	Type              string    // eventType: TEXT_DELIVERED, TEXT_PENDING, …; always starts with "TEXT_"
	Version           string    // eventVersion
	Timestamp         time.Time // eventTimestamp, in UTC
	IsFinal           bool      // isFinal: no later event will come for the message
	MessageID         string    // messageId, never empty
	Origination       string    // originationPhoneNumber: the number (or sender ID) it was sent from
	Destination       string    // destinationPhoneNumber
	CountryCode       string    // isoCountryCode
	MCC, MNC          string    // mcc, mnc (JSON numbers are kept as written)
	RequestTimestamp  time.Time // messageRequestTimestamp, in UTC; zero when absent
	Encoding          string    // messageEncoding: GSM or Unicode
	MessageType       string    // messageType: TRANSACTIONAL or PROMOTIONAL
	Status            string    // messageStatus: SUCCESSFUL, DELIVERED, UNKNOWN, …
	StatusDescription string    // messageStatusDescription
	Bulksend          string    // context.bulksend: "<campaign>:<row>" when bulksend sent it
	Parts             int       // totalMessageParts
	Price             float64   // totalMessagePrice, in US dollars
	CarrierFee        float64   // totalCarrierFee, in US dollars
	HasPrice          bool      // totalMessagePrice or totalCarrierFee is given
	Line              int       // the line the record starts on (see Reader)
}

// Counts says what a Reader has read so far.
//
// Every record is counted in Records and in exactly one of Events,
// NotEvent and Invalid, so Records == Events + NotEvent + Invalid.
type Counts struct {
	Records  int64 // objects read, and stretches of text that are not one
	Events   int64 // SMS events, each returned by Next
	NotEvent int64 // JSON objects that are not SMS events (voice, MMS, SNS confirmations, inbound messages, …)
	Inbound  int64 // of NotEvent, inbound SMS messages (see ParseInbound)
	Invalid  int64 // records that are not JSON, are too long, or are SMS events that cannot be read

	FirstInvalid []int // the lines of the first few invalid records
}
