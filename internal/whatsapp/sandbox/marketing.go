package sandbox

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// api is the endpoint a send came to.
type api int

const (
	messagesAPI  api = iota // POST /{phone-number-id}/messages (Cloud API)
	marketingAPI            // POST /{phone-number-id}/marketing_messages (Marketing Messages API)
)

// record is the api field of an Accepted record.
func (a api) record() string {
	if a == marketingAPI {
		return "marketing_messages"
	}
	return ""
}

// product_policy values of the Marketing Messages API.
const (
	PolicyFallback = "CLOUD_API_FALLBACK" // send through Cloud API when the Marketing Messages API cannot
	PolicyStrict   = "STRICT"             // refuse instead
)

// defaultSyncFor is how long a new marketing template takes to sync with
// the ad account before the Marketing Messages API sends it (Meta: up to
// 10 minutes).
const defaultSyncFor = 10 * time.Minute

// route is how an accepted send goes out.
type route struct {
	category string // pricing category of its webhooks
	lite     bool   // through the Marketing Messages API (pricing marketing_lite)
	fallback bool   // sent to /marketing_messages but through Cloud API
}

// route applies the account-level rules to a valid send from number id at
// t: the number's SendError, marketing templates disabled on Cloud API,
// and the Marketing Messages API's onboarding and template sync. These
// answers come before the rate limits and use up no draw.
func (s *Server) route(id string, a api, req sendRequest, tmpl Template, t time.Time) (route, failure) {
	if code := s.cfg.Numbers[id].SendError; code != 0 {
		return route{}, accountError(code)
	}
	marketing := strings.EqualFold(tmpl.Category, "marketing")
	switch {
	case a == messagesAPI && marketing && s.cfg.MarketingOffOnCloudAPI:
		return route{}, errMarketingOff
	case a == messagesAPI:
		return route{category: tmpl.Category}, failure{}
	case !s.cfg.MMOnboarded && req.ProductPolicy == PolicyStrict:
		return route{}, waError(codeMMUnavailable, "Template unavailable",
			fmt.Sprintf("Template %s is not available for the Marketing Messages API: the WhatsApp Business Account is not onboarded (marketing_messages_lite_api_status is not ONBOARDED).", tmpl.Name))
	case !s.cfg.MMOnboarded && s.cfg.MarketingOffOnCloudAPI:
		// CLOUD_API_FALLBACK, but Cloud API takes no marketing templates.
		return route{}, errMarketingOff
	case !s.cfg.MMOnboarded:
		return route{category: tmpl.Category, fallback: true}, failure{}
	case s.syncing(tmpl.Name, t):
		return route{}, waError(codeSyncing, "Template is still syncing",
			fmt.Sprintf("Template %s is still being synced with the ad account for the Marketing Messages API. Wait 10 minutes and try again.", tmpl.Name))
	}
	return route{category: "marketing_lite", lite: true}, failure{}
}

// syncing reports whether template name is still syncing at t: it is named
// in Config.MMSyncing and MMSyncFor has not passed since New.
func (s *Server) syncing(name string, t time.Time) bool {
	if !s.syncNames[name] {
		return false
	}
	return s.syncFor < 0 || t.Before(s.start.Add(s.syncFor))
}

// marketingFields decodes and checks the Marketing Messages API's own
// fields of req: product_policy one of its two values, if given, and
// message_activity_sharing a boolean.
func marketingFields(req *sendRequest) failure {
	if raw := req.RawProductPolicy; len(raw) > 0 && string(raw) != "null" {
		if json.Unmarshal(raw, &req.ProductPolicy) != nil || (req.ProductPolicy != PolicyFallback && req.ProductPolicy != PolicyStrict) {
			return invalidParam(fmt.Sprintf("Param product_policy must be one of {%s, %s}, not %s.", PolicyFallback, PolicyStrict, raw))
		}
	}
	if raw := req.RawMessageActivitySharing; len(raw) > 0 && string(raw) != "null" {
		var b bool
		if json.Unmarshal(raw, &b) != nil {
			return invalidParam(fmt.Sprintf("Param message_activity_sharing must be a boolean, not %s.", raw))
		}
	}
	return failure{}
}

var errMarketingOff = waError(codeMarketingOff, "Marketing messages are disabled on Cloud API",
	"Marketing template messages cannot be sent through Cloud API for this WhatsApp Business Account (disable_marketing_messages_on_cloud_api). Send them through the Marketing Messages API.")

func notMarketing(name, category string) failure {
	return waError(codeNotMarketing, "Not a marketing template",
		fmt.Sprintf("Template %s is a %s template; the Marketing Messages API sends marketing templates only.", name, strings.ToUpper(category)))
}
