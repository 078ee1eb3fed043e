package template

// Wire shapes of a send request's template components, as Meta's Messages
// API documents them (the OpenAPI file's TemplateComponent and parameter
// objects, plus the coupon_code and location parameters that its schemas
// lack).

// SendComponent is one entry of template.components in a send request.
type SendComponent struct {
	Type       string      `json:"type"`               // header, body, button
	SubType    string      `json:"sub_type,omitempty"` // buttons: url, quick_reply, copy_code
	Index      string      `json:"index,omitempty"`    // buttons: "0" to "9"
	Parameters []Parameter `json:"parameters"`
}

// Parameter is one parameter of a component. Exactly one value field is
// set, the one Type names.
type Parameter struct {
	Type          string    `json:"type"` // text, image, video, document, location, payload, coupon_code
	ParameterName string    `json:"parameter_name,omitempty"`
	Text          string    `json:"text,omitempty"`
	Payload       string    `json:"payload,omitempty"`
	CouponCode    string    `json:"coupon_code,omitempty"`
	Image         *Media    `json:"image,omitempty"`
	Video         *Media    `json:"video,omitempty"`
	Document      *Media    `json:"document,omitempty"`
	Location      *Location `json:"location,omitempty"`
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
