package whatsapp

import (
	"context"
	"fmt"
	"net/url"
)

// phoneFields are the fields a preflight reads of a sender number.
const phoneFields = "id,display_phone_number,verified_name,quality_rating,throughput," +
	"whatsapp_business_manager_messaging_limit,name_status,status,health_status"

// PhoneNumber is what Graph says of a business phone number: who it is,
// how well it is doing, how fast and to how many users it may send, and
// whether it can send at all. Fields Graph leaves out are zero.
type PhoneNumber struct {
	ID                 string `json:"id"`
	DisplayPhoneNumber string `json:"display_phone_number"`
	VerifiedName       string `json:"verified_name"`
	QualityRating      string `json:"quality_rating"` // GREEN, YELLOW, RED, NA
	Throughput         struct {
		Level string `json:"level"` // STANDARD, HIGH, NOT_APPLICABLE: see ThroughputRate
	} `json:"throughput"`
	// MessagingLimit is the business portfolio's messaging limit, shared
	// by all its numbers since October 2025: TIER_250 … TIER_UNLIMITED
	// (see MessagingLimit).
	MessagingLimit string       `json:"whatsapp_business_manager_messaging_limit"`
	NameStatus     string       `json:"name_status"` // APPROVED, AVAILABLE_WITHOUT_REVIEW, DECLINED, EXPIRED, PENDING_REVIEW, NONE
	Status         string       `json:"status"`      // CONNECTED, DISCONNECTED, PENDING, FLAGGED, RESTRICTED, RATE_LIMITED, …
	Health         HealthStatus `json:"health_status"`
}

// HealthStatus says whether a node can send messages: overall, and for
// each entity it depends on (the number, its WhatsApp Business Account,
// the business, the app).
type HealthStatus struct {
	CanSendMessage string         `json:"can_send_message"` // AVAILABLE, LIMITED, BLOCKED
	Entities       []HealthEntity `json:"entities"`
}

// HealthEntity is one entity's part of a HealthStatus.
type HealthEntity struct {
	EntityType     string        `json:"entity_type"` // PHONE_NUMBER, WABA, BUSINESS, APP, MESSAGE_TEMPLATE
	ID             string        `json:"id"`
	CanSendMessage string        `json:"can_send_message"` // AVAILABLE, LIMITED, BLOCKED
	Errors         []HealthError `json:"errors"`           // why it is LIMITED or BLOCKED
}

// HealthError is why an entity is LIMITED or BLOCKED, in Meta's words.
type HealthError struct {
	ErrorCode        int    `json:"error_code"`
	ErrorDescription string `json:"error_description"`
	PossibleSolution string `json:"possible_solution"`
}

// PhoneNumber reads the sender number id's health status, quality rating,
// throughput level and messaging limit (GET /{id}?fields=…), one Graph
// call counted against the business's management budget. An API error is
// an *APIError (errors.Is tells ErrToken and its kin).
func (c *Client) PhoneNumber(ctx context.Context, id string) (PhoneNumber, error) {
	var pn PhoneNumber
	if err := c.get(ctx, url.PathEscape(id), url.Values{"fields": {phoneFields}}, &pn); err != nil {
		return PhoneNumber{}, fmt.Errorf("read phone number %s: %w", id, err)
	}
	return pn, nil
}

// MessagingLimit reads a messaging-limit tier
// (whatsapp_business_manager_messaging_limit): how many unique users the
// business portfolio may message outside a customer service window in a
// moving 24 hours, or unlimited. ok is false for a tier it does not know.
// The ladder is now 250, 2,000, 10,000, 100,000, unlimited; TIER_50 and
// TIER_1K are values of the deprecated per-number messaging_limit_tier,
// TIER_1K a step the ladder had before October 2025.
func MessagingLimit(tier string) (users int, unlimited, ok bool) {
	switch tier {
	case "TIER_50":
		return 50, false, true
	case "TIER_250":
		return 250, false, true
	case "TIER_1K":
		return 1000, false, true
	case "TIER_2K":
		return 2000, false, true
	case "TIER_10K":
		return 10000, false, true
	case "TIER_100K":
		return 100000, false, true
	case "TIER_UNLIMITED":
		return 0, true, true
	}
	return 0, false, false
}

// StandardThroughput is what a number's default level (STANDARD) allows
// a second; a number told more may still be at it.
const StandardThroughput = 80

// ThroughputRate is the messages per second a number's throughput level
// allows, inbound and outbound together: 80 for STANDARD, 1,000 for HIGH
// (an automatic upgrade). ok is false for any other level, NOT_APPLICABLE
// included. A coexistence number (one also used in the WhatsApp Business
// app) is held to 20 messages per second, but its level does not say so:
// nothing here can tell.
func ThroughputRate(level string) (perSecond float64, ok bool) {
	switch level {
	case "STANDARD":
		return StandardThroughput, true
	case "HIGH":
		return 1000, true
	}
	return 0, false
}
