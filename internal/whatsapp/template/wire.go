package template

import "encoding/json"

// Wire shapes of a send request's template components, as Meta's Messages
// API documents them (the OpenAPI file's TemplateComponent and parameter
// objects, plus the coupon_code, location and action parameters that its
// schemas lack; the action parameter is the file's own example "Send Flow
// Template Message").

// SendComponent is one entry of template.components in a send request.
type SendComponent struct {
	Type       string      `json:"type"`               // header, body, button
	SubType    string      `json:"sub_type,omitempty"` // buttons: url, quick_reply, copy_code, flow
	Index      string      `json:"index,omitempty"`    // buttons: "0" to "9"
	Parameters []Parameter `json:"parameters"`
}

// Parameter is one parameter of a component. Exactly one value field is
// set, the one Type names.
type Parameter struct {
	Type          string    `json:"type"` // text, image, video, document, location, payload, coupon_code, action
	ParameterName string    `json:"parameter_name,omitempty"`
	Text          string    `json:"text,omitempty"`
	Payload       string    `json:"payload,omitempty"`
	CouponCode    string    `json:"coupon_code,omitempty"`
	Image         *Media    `json:"image,omitempty"`
	Video         *Media    `json:"video,omitempty"`
	Document      *Media    `json:"document,omitempty"`
	Location      *Location `json:"location,omitempty"`
	Action        *Action   `json:"action,omitempty"`
}

// Media is an image, video or document by uploaded media ID or by link.
type Media struct {
	ID       string `json:"id,omitempty"`
	Link     string `json:"link,omitempty"`
	Filename string `json:"filename,omitempty"` // documents only
}

// Location is a location header. Meta takes the coordinates as strings.
type Location struct {
	Latitude  string `json:"latitude"`
	Longitude string `json:"longitude"`
	Name      string `json:"name,omitempty"`
	Address   string `json:"address,omitempty"`
}

// Action is a Flow button's parameter: the token that names this Flow
// session in the answers the Flow sends back, and the data of the Flow's
// first screen. Either may be left out; an Action has one at least.
type Action struct {
	FlowToken      string          `json:"flow_token,omitempty"`
	FlowActionData json.RawMessage `json:"flow_action_data,omitempty"` // a JSON object
}
