package webhook

import (
	"encoding/json"
	"strconv"
	"time"
)

// Fixed identifiers Body writes where Status has no field for them.
const (
	bodyWABAID       = "102290129340398" // entry[].id
	bodyDisplayPhone = "15550783881"     // metadata.display_phone_number
)

// Body returns one webhook POST body, shaped as Meta sends it, that carries
// the statuses s (all in one change of field "messages") for the sender
// phoneNumberID. It is for tests that need a webhook log: write one Body per
// line. There is no trailing newline.
//
// Each status is written with its string unix timestamp (a zero Timestamp
// as "0"), its recipient_id, its biz_opaque_callback_data if not empty, and
// an errors[] entry if ErrorCode or ErrorTitle is set. A status with a
// Pricing gets that pricing object (pricing_model PMP) and a conversation
// of its category; like Meta, Body adds them to "sent" and "delivered"
// statuses without one, as a billable regular marketing message.
// PhoneNumberID and Line of s are ignored.
func Body(phoneNumberID string, s ...Status) []byte {
	statuses := make([]wireStatus, len(s))
	for i, st := range s {
		ts := int64(0)
		if !st.Timestamp.IsZero() {
			ts = st.Timestamp.Unix()
		}
		w := wireStatus{
			ID:           st.WAMID,
			Status:       st.Status,
			Timestamp:    strconv.FormatInt(ts, 10),
			RecipientID:  st.RecipientID,
			CallbackData: st.CallbackData,
		}
		p := st.Pricing
		if p == (Pricing{}) && (st.Status == "sent" || st.Status == "delivered") {
			p = defaultPricing
		}
		if p != (Pricing{}) {
			w.Conversation = &wireConversation{
				ID:         "c" + st.WAMID,
				Expiration: strconv.FormatInt(ts+int64(24*time.Hour/time.Second), 10),
				Origin:     wireOrigin{Type: p.Category},
			}
			w.Pricing = &wirePricing{Model: "PMP", Type: p.Type, Category: p.Category}
			if p.HasBillable {
				w.Pricing.Billable = &p.Billable
			}
		}
		if st.ErrorCode != 0 || st.ErrorTitle != "" {
			w.Errors = []wireError{{
				Code:    st.ErrorCode,
				Title:   st.ErrorTitle,
				Message: st.ErrorTitle,
				Data:    wireErrorData{Details: st.ErrorTitle},
				Href:    "/documentation/business-messaging/whatsapp/support/error-codes",
			}}
		}
		statuses[i] = w
	}
	b, err := json.Marshal(wireBody{
		Object: "whatsapp_business_account",
		Entry: []wireEntry{{
			ID: bodyWABAID,
			Changes: []wireChange{{
				Value: wireValue{
					Product:  "whatsapp",
					Metadata: wireMetadata{DisplayPhone: bodyDisplayPhone, PhoneNumberID: phoneNumberID},
					Statuses: statuses,
				},
				Field: "messages",
			}},
		}},
	})
	if err != nil {
		panic("webhook: marshal body: " + err.Error()) // only strings and ints: cannot fail
	}
	return b
}

// defaultPricing is the pricing Body gives sent and delivered statuses
// without one.
var defaultPricing = Pricing{Category: "marketing", Type: "regular", Billable: true, HasBillable: true}

// The wire shape of a status webhook (Meta's WebhookPayload schema).
type (
	wireBody struct {
		Object string      `json:"object"`
		Entry  []wireEntry `json:"entry"`
	}
	wireEntry struct {
		ID      string       `json:"id"`
		Changes []wireChange `json:"changes"`
	}
	wireChange struct {
		Value wireValue `json:"value"`
		Field string    `json:"field"`
	}
	wireValue struct {
		Product  string       `json:"messaging_product"`
		Metadata wireMetadata `json:"metadata"`
		Statuses []wireStatus `json:"statuses"`
	}
	wireMetadata struct {
		DisplayPhone  string `json:"display_phone_number"`
		PhoneNumberID string `json:"phone_number_id"`
	}
	wireStatus struct {
		ID           string            `json:"id"`
		Status       string            `json:"status"`
		Timestamp    string            `json:"timestamp"`
		RecipientID  string            `json:"recipient_id"`
		CallbackData string            `json:"biz_opaque_callback_data,omitempty"`
		Conversation *wireConversation `json:"conversation,omitempty"`
		Pricing      *wirePricing      `json:"pricing,omitempty"`
		Errors       []wireError       `json:"errors,omitempty"`
	}
	wireConversation struct {
		ID         string     `json:"id"`
		Expiration string     `json:"expiration_timestamp"`
		Origin     wireOrigin `json:"origin"`
	}
	wireOrigin struct {
		Type string `json:"type"`
	}
	wirePricing struct {
		Billable *bool  `json:"billable,omitempty"`
		Model    string `json:"pricing_model"`
		Type     string `json:"type,omitempty"`
		Category string `json:"category,omitempty"`
	}
	wireError struct {
		Code    int           `json:"code"`
		Title   string        `json:"title"`
		Message string        `json:"message"`
		Data    wireErrorData `json:"error_data"`
		Href    string        `json:"href"`
	}
	wireErrorData struct {
		Details string `json:"details"`
	}
)
