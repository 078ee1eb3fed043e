package smssandbox

import "strings"

// inboundRecord is an inbound SMS message as AWS End User Messaging
// publishes a two-way number's replies to its SNS topic: the Message of
// the notification, camelCase members, no time of its own.
type inboundRecord struct {
	OriginationNumber string `json:"originationNumber"` // the recipient who replied
	DestinationNumber string `json:"destinationNumber"` // the two-way number the reply reached
	// MessageKeyword is the keyword of the number's the reply matched (AWS
	// matches the whole text, case aside); left out for free text.
	MessageKeyword             string `json:"messageKeyword,omitempty"`
	MessageBody                string `json:"messageBody"`
	InboundMessageID           string `json:"inboundMessageId"`
	PreviousPublishedMessageID string `json:"previousPublishedMessageId"` // the last message sent from DestinationNumber to OriginationNumber
}

// keywords are the keywords a number of the sandbox has: AWS's default
// opt-out keywords the replies use, and HELP.
var keywords = map[string]bool{"STOP": true, "UNSUBSCRIBE": true, "ARRET": true, helpReply: true}

// keywordOf is the keyword text matches, or "".
func keywordOf(text string) string {
	if k := strings.ToUpper(strings.TrimSpace(text)); keywords[k] {
		return k
	}
	return ""
}

// canReply reports whether a recipient can reply to messages from
// phone: a phone number can be replied to, a sender ID or a pool without
// numbers (its ID stands for its number) cannot.
func canReply(phone string) bool { return strings.HasPrefix(phone, "+") && isPhone(phone) }
