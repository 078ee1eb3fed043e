package sandbox

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

func newDefinitionServer(t testing.TB) *Server {
	s := New(Config{Token: token, Rate: -1, PairInterval: -1, Definitions: FixtureDefinitions()})
	t.Cleanup(func() { s.Close() })
	return s
}

func TestDefinitionSendsAccepted(t *testing.T) {
	s := newDefinitionServer(t)
	covered := map[string]bool{}
	for i, v := range ValidSends() {
		covered[v.Template] = true
		t.Run(v.Template+"/"+v.Name, func(t *testing.T) {
			a := do(s, http.MethodPost, path, token, v.Body(fmt.Sprint(16505550000+i)))
			if a.status != 200 || !strings.HasPrefix(a.wamid, "wamid.") {
				t.Errorf("got %v", a)
			}
		})
	}
	for _, d := range FixtureDefinitions() {
		if d.Approved() && !covered[d.Name] {
			t.Errorf("approved template %s has no case in ValidSends", d.Name)
		}
	}
}

// details is the error_data.details of an error answer.
func details(a answer) string {
	var e errorBody
	json.Unmarshal(a.body, &e)
	if e.Error.ErrorData == nil {
		return ""
	}
	return e.Error.ErrorData.Details
}

func TestDefinitionSendsRefused(t *testing.T) {
	long := func(n int) string { return js(strings.Repeat("x", n)) }
	// Parts of valid requests, to vary one thing at a time.
	const (
		springHeader = `{"type":"header","parameters":[{"type":"image","image":{"link":"https://cdn.example.com/spring.jpg"}}]}`
		springBody   = `{"type":"body","parameters":[{"type":"text","text":"Maria"},{"type":"text","text":"20%"}]}`
		springURL    = `{"type":"button","sub_type":"url","index":"0","parameters":[{"type":"text","text":"SPRING20"}]}`
		couponHeader = `{"type":"header","parameters":[{"type":"text","text":"Fall Sale"}]}`
		couponBody   = `{"type":"body","parameters":[{"type":"text","text":"25OFF"},{"type":"text","text":"25%"}]}`
		couponButton = `{"type":"button","sub_type":"copy_code","index":"1","parameters":[{"type":"coupon_code","coupon_code":"25OFF"}]}`
		orderURL     = `{"type":"button","sub_type":"url","index":"0","parameters":[{"type":"text","text":"SB-1001"}]}`
		loginBody    = `{"type":"body","parameters":[{"type":"text","text":"482913"}]}`
		loginButton  = `{"type":"button","sub_type":"url","index":"0","parameters":[{"type":"text","text":"482913"}]}`
		storeBody    = `{"type":"body","parameters":[{"type":"text","text":"SB-1001"}]}`
		teaserBody   = `{"type":"body","parameters":[{"type":"text","text":"Maria"}]}`
		vipHeader    = `{"type":"header","parameters":[{"type":"text","parameter_name":"first_name","text":"Maria"}]}`
		vipBody      = `{"type":"body","parameters":[{"type":"text","parameter_name":"code","text":"VIP7"}]}`
		signupBody   = `{"type":"body","parameters":[{"type":"text","text":"Maria"}]}`
	)
	spring := func(cs ...string) string { return "[" + strings.Join(cs, ",") + "]" }
	withBody := func(params string) string {
		return spring(springHeader, `{"type":"body","parameters":[`+params+`]}`, springURL)
	}
	order := func(params string) string { return spring(`{"type":"body","parameters":[`+params+`]}`, orderURL) }
	image := func(obj string) string {
		return spring(`{"type":"header","parameters":[{"type":"image","image":`+obj+`}]}`, springBody, springURL)
	}
	location := func(obj string) string {
		return spring(`{"type":"header","parameters":[{"type":"location","location":`+obj+`}]}`, storeBody)
	}
	coupon := func(header, button string) string { return spring(header, couponBody, button) }
	// flow is event_signup's request with its Flow button's parameters.
	flow := func(params string) string {
		return spring(signupBody, `{"type":"button","sub_type":"flow","index":"0","parameters":[`+params+`]}`)
	}
	action := func(obj string) string { return flow(`{"type":"action","action":` + obj + `}`) }

	tests := []struct {
		name, template, lang, components string
		wantStatus, wantCode             int
		wantDetail                       string // a part of error_data.details
	}{
		// status
		{"paused", "autumn_sale", "", spring(teaserBody), 400, 132015, "paused"},
		{"disabled", "retired_offer", "", spring(teaserBody), 400, 132016, "disabled"},
		{"rejected", "old_promo", "", spring(teaserBody), 404, 132001, "old_promo"},
		{"other language", "spring_sale", "pt_BR", spring(springHeader, springBody, springURL), 404, 132001, "pt_BR"},
		{"unknown name", "spring_sale_2", "", spring(springBody), 404, 132001, "spring_sale_2"},

		// the request's components
		{"footer component", "summer_teaser", "", spring(`{"type":"footer","parameters":[]}`, teaserBody), 400, 100, "footer"},
		{"component without type", "summer_teaser", "", spring(`{"parameters":[]}`, teaserBody), 400, 131008, "type"},
		{"two bodies", "spring_sale", "", spring(springHeader, springBody, springBody, springURL), 400, 100, "more than one body"},

		// header
		{"media header missing", "spring_sale", "", spring(springBody, springURL), 400, 132000, "header: number of params (0) does not match the expected number of params (1)"},
		{"media header without parameters", "spring_sale", "", spring(`{"type":"header","parameters":[]}`, springBody, springURL), 400, 132000, "header: number of params (0)"},
		{"two header parameters", "spring_sale", "", spring(`{"type":"header","parameters":[{"type":"image","image":{"id":"1"}},{"type":"image","image":{"id":"2"}}]}`, springBody, springURL), 400, 132000, "header: number of params (2)"},
		{"text for an image header", "spring_sale", "", spring(`{"type":"header","parameters":[{"type":"text","text":"Spring"}]}`, springBody, springURL), 400, 132012, "type text where the template takes image"},
		{"video for an image header", "spring_sale", "", spring(`{"type":"header","parameters":[{"type":"video","video":{"id":"1"}}]}`, springBody, springURL), 400, 132012, "takes image"},
		{"image for a document header", "invoice_ready", "", spring(`{"type":"header","parameters":[{"type":"image","image":{"id":"1"}}]}`, `{"type":"body","parameters":[{"type":"text","text":"Maria"},{"type":"text","text":"INV-1"}]}`), 400, 132012, "takes document"},
		{"header parameter without type", "spring_sale", "", spring(`{"type":"header","parameters":[{"image":{"id":"1"}}]}`, springBody, springURL), 400, 131008, "type"},
		{"image object missing", "spring_sale", "", image(`null`), 400, 131008, "parameter image is required"},
		{"image with neither id nor link", "spring_sale", "", image(`{}`), 400, 131009, "needs an id or a link"},
		{"image with id and link", "spring_sale", "", image(`{"id":"1339522734477770","link":"https://cdn.example.com/a.jpg"}`), 400, 131009, "not both"},
		{"relative image link", "spring_sale", "", image(`{"link":"/spring.jpg"}`), 400, 131009, "not an absolute http(s) URL"},
		{"ftp image link", "spring_sale", "", image(`{"link":"ftp://cdn.example.com/spring.jpg"}`), 400, 131009, "not an absolute http(s) URL"},
		{"video with neither id nor link", "summer_teaser", "", spring(`{"type":"header","parameters":[{"type":"video","video":{"caption":"x"}}]}`, teaserBody), 400, 131009, "video needs"},
		{"document link without host", "invoice_ready", "", spring(`{"type":"header","parameters":[{"type":"document","document":{"link":"https:///a.pdf"}}]}`, `{"type":"body","parameters":[{"type":"text","text":"Maria"},{"type":"text","text":"INV-1"}]}`), 400, 131009, "document link"},
		{"latitude out of range", "store_visit", "", location(`{"latitude":"90.5","longitude":"0"}`), 400, 131009, "location.latitude"},
		{"longitude out of range", "store_visit", "", location(`{"latitude":"0","longitude":-180.01}`), 400, 131009, "location.longitude"},
		{"latitude not a number", "store_visit", "", location(`{"latitude":"north","longitude":"0"}`), 400, 131009, "location.latitude"},
		{"latitude NaN", "store_visit", "", location(`{"latitude":"NaN","longitude":"0"}`), 400, 131009, "location.latitude"},
		{"latitude missing", "store_visit", "", location(`{"longitude":"0"}`), 400, 131008, "location.latitude"},
		{"longitude empty", "store_visit", "", location(`{"latitude":"0","longitude":""}`), 400, 131008, "location.longitude"},
		{"location object missing", "store_visit", "", spring(`{"type":"header","parameters":[{"type":"location"}]}`, storeBody), 400, 131008, "location"},
		{"text header missing", "fall_coupon", "", coupon(`{"type":"header","parameters":[]}`, couponButton), 400, 132000, "header: number of params (0)"},
		{"header text of 61 characters", "fall_coupon", "", coupon(`{"type":"header","parameters":[{"type":"text","text":`+long(61)+`}]}`, couponButton), 400, 132005, "61 characters"},
		{"header text with a new line", "fall_coupon", "", coupon(`{"type":"header","parameters":[{"type":"text","text":"Fall\nSale"}]}`, couponButton), 400, 132018, "new-line/tab"},
		{"header text empty", "fall_coupon", "", coupon(`{"type":"header","parameters":[{"type":"text","text":""}]}`, couponButton), 400, 131008, "text"},
		{"header parameter_name in a positional template", "fall_coupon", "", coupon(`{"type":"header","parameters":[{"type":"text","parameter_name":"sale","text":"Fall Sale"}]}`, couponButton), 400, 132000, "parameter_name (sale) is not expected"},
		{"header parameter for a static header", "order_update", "", spring(`{"type":"header","parameters":[{"type":"text","text":"Your order"}]}`, `{"type":"body","parameters":[{"type":"text","parameter_name":"first_name","text":"Maria"},{"type":"text","parameter_name":"order_id","text":"SB-1001"},{"type":"text","parameter_name":"ship_date","text":"May 14"}]}`, orderURL), 400, 132000, "header: number of params (1) does not match the expected number of params (0)"},
		{"header parameter for a template without header", "account_notice", "", spring(`{"type":"header","parameters":[{"type":"text","text":"Hi"}]}`, `{"type":"body","parameters":[{"type":"text","text":"Maria"},{"type":"text","text":"hello"}]}`), 400, 132000, "header: number of params (1)"},
		{"named header without parameter_name", "vip_welcome", "", spring(`{"type":"header","parameters":[{"type":"text","text":"Maria"}]}`, vipBody), 400, 132000, "parameter name () does not match the template's parameter (first_name)"},
		{"named header with another name", "vip_welcome", "", spring(`{"type":"header","parameters":[{"type":"text","parameter_name":"name","text":"Maria"}]}`, vipBody), 400, 132000, "(first_name)"},

		// body
		{"body missing", "summer_teaser", "", spring(`{"type":"header","parameters":[{"type":"video","video":{"id":"1"}}]}`), 400, 132000, "body: number of localizable_params (0) does not match the expected number of params (1)"},
		{"too few body parameters", "spring_sale", "", withBody(`{"type":"text","text":"Maria"}`), 400, 132000, "body: number of localizable_params (1) does not match the expected number of params (2)"},
		{"too many body parameters", "spring_sale", "", withBody(`{"type":"text","text":"a"},{"type":"text","text":"b"},{"type":"text","text":"c"}`), 400, 132000, "(3)"},
		{"parameter_name in a positional body", "spring_sale", "", withBody(`{"type":"text","parameter_name":"first_name","text":"Maria"},{"type":"text","text":"20%"}`), 400, 132000, "parameter_name (first_name) is not expected"},
		{"named body without parameter_name", "order_update", "", order(`{"type":"text","text":"Maria"},{"type":"text","parameter_name":"order_id","text":"SB-1001"},{"type":"text","parameter_name":"ship_date","text":"May 14"}`), 400, 132000, "no parameter_name"},
		{"named body with an unknown name", "order_update", "", order(`{"type":"text","parameter_name":"frist_name","text":"Maria"},{"type":"text","parameter_name":"order_id","text":"SB-1001"},{"type":"text","parameter_name":"ship_date","text":"May 14"}`), 400, 132000, "parameter name (frist_name) is not a parameter of the template; missing: first_name"},
		{"named body with a name twice", "order_update", "", order(`{"type":"text","parameter_name":"order_id","text":"Maria"},{"type":"text","parameter_name":"order_id","text":"SB-1001"},{"type":"text","parameter_name":"ship_date","text":"May 14"}`), 400, 132000, "(order_id) is given more than once; missing: first_name"},
		{"named body short of a name", "order_update", "", order(`{"type":"text","parameter_name":"first_name","text":"Maria"},{"type":"text","parameter_name":"order_id","text":"SB-1001"}`), 400, 132000, "(2) does not match the expected number of params (3)"},
		{"body text with a new line", "spring_sale", "", withBody(`{"type":"text","text":"Maria\nLopez"},{"type":"text","text":"20%"}`), 400, 132018, "Param text cannot have new-line/tab characters or more than 4 consecutive spaces"},
		{"body text with a tab", "spring_sale", "", withBody(`{"type":"text","text":"Maria\tLopez"},{"type":"text","text":"20%"}`), 400, 132018, "new-line/tab"},
		{"body text with 5 spaces in a row", "spring_sale", "", withBody(`{"type":"text","text":"Maria     Lopez"},{"type":"text","text":"20%"}`), 400, 132018, "more than 4 consecutive spaces"},
		{"body text empty", "spring_sale", "", withBody(`{"type":"text","text":""},{"type":"text","text":"20%"}`), 400, 131008, "body: parameter {{1}}: the parameter text is required"},
		{"body text missing", "spring_sale", "", withBody(`{"type":"text"},{"type":"text","text":"20%"}`), 400, 131008, "text"},
		{"body text of 1025 characters beside a header", "summer_teaser", "", spring(`{"type":"header","parameters":[{"type":"video","video":{"id":"1"}}]}`, `{"type":"body","parameters":[{"type":"text","text":`+long(1025)+`}]}`), 400, 132005, "1025 characters long; at most 1024"},
		{"body-only text of 32769 characters", "account_notice", "", spring(`{"type":"body","parameters":[{"type":"text","text":"Maria"},{"type":"text","text":` + long(32769) + `}]}`), 400, 132005, "at most 32768"},
		{"body text of 1025 characters beside an empty header", "account_notice", "", spring(`{"type":"header","parameters":[]}`, `{"type":"body","parameters":[{"type":"text","text":"Maria"},{"type":"text","text":`+long(1025)+`}]}`), 400, 132005, "at most 1024"},
		{"image in the body", "spring_sale", "", withBody(`{"type":"image","image":{"id":"1"}},{"type":"text","text":"20%"}`), 400, 132012, "type image where the template takes text"},
		{"currency without its object", "invoice_ready", "", spring(`{"type":"header","parameters":[{"type":"document","document":{"id":"1"}}]}`, `{"type":"body","parameters":[{"type":"text","text":"Maria"},{"type":"currency"}]}`), 400, 131008, "currency"},
		{"date_time without fallback", "order_update", "", order(`{"type":"text","parameter_name":"first_name","text":"Maria"},{"type":"text","parameter_name":"order_id","text":"SB-1001"},{"type":"date_time","parameter_name":"ship_date","date_time":{}}`), 400, 131008, "date_time.fallback_value"},
		{"body parameter not an object", "spring_sale", "", withBody(`1,{"type":"text","text":"20%"}`), 400, 100, "parameter 1"},
		{"body parameter without type", "spring_sale", "", withBody(`{"text":"Maria"},{"type":"text","text":"20%"}`), 400, 131008, "type"},

		// buttons
		{"url button missing", "spring_sale", "", spring(springHeader, springBody), 400, 132000, "buttons: number of params (0) does not match the expected number of params (1) for the button at index 0 (URL)"},
		{"only the quick reply", "spring_sale", "", spring(springHeader, springBody, `{"type":"button","sub_type":"quick_reply","index":"1","parameters":[{"type":"payload","payload":"STOP"}]}`), 400, 132000, "index 0 (URL)"},
		{"index 10", "spring_sale", "", spring(springHeader, springBody, `{"type":"button","sub_type":"url","index":"10","parameters":[{"type":"text","text":"x"}]}`), 400, 131009, "Invalid button index"},
		{"index -1", "spring_sale", "", spring(springHeader, springBody, `{"type":"button","sub_type":"url","index":-1,"parameters":[{"type":"text","text":"x"}]}`), 400, 131009, "Invalid button index"},
		{"index 1.0", "spring_sale", "", spring(springHeader, springBody, `{"type":"button","sub_type":"url","index":1.0,"parameters":[{"type":"text","text":"x"}]}`), 400, 131009, "Invalid button index"},
		{"index of a button the template lacks", "spring_sale", "", spring(springHeader, springBody, springURL, `{"type":"button","sub_type":"url","index":"2","parameters":[{"type":"text","text":"x"}]}`), 400, 131009, "Button at index 2 of type Url does not exist"},
		{"index missing", "spring_sale", "", spring(springHeader, springBody, `{"type":"button","sub_type":"url","parameters":[{"type":"text","text":"x"}]}`), 400, 131008, "index"},
		{"sub_type missing", "spring_sale", "", spring(springHeader, springBody, `{"type":"button","index":"0","parameters":[{"type":"text","text":"x"}]}`), 400, 131008, "sub_type"},
		{"sub_type not a string", "spring_sale", "", spring(springHeader, springBody, `{"type":"button","sub_type":1,"index":"0","parameters":[{"type":"text","text":"x"}]}`), 400, 100, "sub_type"},
		{"quick_reply for a URL button", "spring_sale", "", spring(springHeader, springBody, `{"type":"button","sub_type":"quick_reply","index":"0","parameters":[{"type":"payload","payload":"x"}]}`), 400, 131009, "Button at index 0 of type Quick_reply does not exist"},
		{"url for a quick-reply button", "spring_sale", "", spring(springHeader, springBody, springURL, `{"type":"button","sub_type":"url","index":"1","parameters":[{"type":"text","text":"x"}]}`), 400, 131009, "Button at index 1 of type Url does not exist"},
		{"same button twice", "spring_sale", "", spring(springHeader, springBody, springURL, springURL), 400, 131009, "more than once"},
		{"url suffix with a space", "spring_sale", "", spring(springHeader, springBody, `{"type":"button","sub_type":"url","index":"0","parameters":[{"type":"text","text":"SPRING 20"}]}`), 400, 131009, "white space"},
		{"url suffix empty", "spring_sale", "", spring(springHeader, springBody, `{"type":"button","sub_type":"url","index":"0","parameters":[{"type":"text","text":""}]}`), 400, 131008, "text"},
		{"url suffix as a payload", "spring_sale", "", spring(springHeader, springBody, `{"type":"button","sub_type":"url","index":"0","parameters":[{"type":"payload","payload":"x"}]}`), 400, 132012, "takes text"},
		{"url button with two parameters", "spring_sale", "", spring(springHeader, springBody, `{"type":"button","sub_type":"url","index":"0","parameters":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}`), 400, 132000, "buttons: number of params (2) does not match the expected number of params (1)"},
		{"url button without parameters", "spring_sale", "", spring(springHeader, springBody, `{"type":"button","sub_type":"url","index":"0","parameters":[]}`), 400, 132000, "buttons: number of params (0)"},
		{"quick reply with text", "spring_sale", "", spring(springHeader, springBody, springURL, `{"type":"button","sub_type":"quick_reply","index":"1","parameters":[{"type":"text","text":"x"}]}`), 400, 132012, "takes payload"},
		{"quick reply with an empty payload", "spring_sale", "", spring(springHeader, springBody, springURL, `{"type":"button","sub_type":"quick_reply","index":"1","parameters":[{"type":"payload","payload":""}]}`), 400, 131008, "payload"},
		{"copy-code button missing", "fall_coupon", "", coupon(couponHeader, `{"type":"button","sub_type":"quick_reply","index":"0","parameters":[{"type":"payload","payload":"x"}]}`), 400, 132000, "index 1 (COPY_CODE)"},
		{"coupon of 16 characters", "fall_coupon", "", coupon(couponHeader, `{"type":"button","sub_type":"copy_code","index":"1","parameters":[{"type":"coupon_code","coupon_code":"FALL2026EXTRA25X"}]}`), 400, 132018, "at most 15"},
		{"coupon as text", "fall_coupon", "", coupon(couponHeader, `{"type":"button","sub_type":"copy_code","index":"1","parameters":[{"type":"text","text":"25OFF"}]}`), 400, 132012, "takes coupon_code"},
		{"coupon empty", "fall_coupon", "", coupon(couponHeader, `{"type":"button","sub_type":"copy_code","index":"1","parameters":[{"type":"coupon_code","coupon_code":""}]}`), 400, 131008, "coupon_code"},
		{"copy_code for the quick reply", "fall_coupon", "", coupon(couponHeader, `{"type":"button","sub_type":"copy_code","index":"0","parameters":[{"type":"coupon_code","coupon_code":"25OFF"}]}`), 400, 131009, "Button at index 0 of type Copy_code does not exist"},
		{"a phone-number button named", "vip_welcome", "", spring(vipHeader, vipBody, `{"type":"button","sub_type":"url","index":"0","parameters":[{"type":"text","text":"x"}]}`), 400, 131009, "Button at index 0 of type Url does not exist"},
		{"a parameter for a static url", "vip_welcome", "", spring(vipHeader, vipBody, `{"type":"button","sub_type":"url","index":"1","parameters":[{"type":"text","text":"x"}]}`), 400, 132000, "buttons: number of params (1) does not match the expected number of params (0)"},

		// Flow buttons
		{"flow button with two parameters", "event_signup", "", flow(`{"type":"action","action":{"flow_token":"a"}},{"type":"action","action":{"flow_token":"b"}}`), 400, 132000, "buttons: number of params (2) does not match the expected number of params (1) for the button at index 0 (FLOW)"},
		{"flow token as text", "event_signup", "", flow(`{"type":"text","text":"SIGNUP-SB-1001"}`), 400, 132012, "a parameter of type text where the template takes action"},
		{"flow token as a payload", "event_signup", "", flow(`{"type":"payload","payload":"SIGNUP-SB-1001"}`), 400, 132012, "takes action"},
		{"flow parameter without type", "event_signup", "", flow(`{"action":{"flow_token":"SIGNUP-SB-1001"}}`), 400, 131008, "the parameter type is required"},
		{"flow action missing", "event_signup", "", flow(`{"type":"action","flow_token":"SIGNUP-SB-1001"}`), 400, 131008, "button at index 0: the parameter action is required"},
		{"flow action null", "event_signup", "", action(`null`), 400, 131008, "the parameter action is required"},
		{"flow action a string", "event_signup", "", action(`"SIGNUP-SB-1001"`), 400, 132018, "action must be an object with flow_token and/or flow_action_data, not a string"},
		{"flow token a number", "event_signup", "", action(`{"flow_token":1001}`), 400, 132018, "action.flow_token must be a string, not a number"},
		{"flow token empty", "event_signup", "", action(`{"flow_token":""}`), 400, 131008, "the parameter action.flow_token is required"},
		{"flow data as JSON text in a string", "event_signup", "", action(`{"flow_token":"T","flow_action_data":"{\"first_name\":\"Maria\"}"}`), 400, 132018, "action.flow_action_data must be a JSON object, not a string"},
		{"flow data an array", "event_signup", "", action(`{"flow_action_data":[{"first_name":"Maria"}]}`), 400, 132018, "not an array"},
		{"flow data empty", "event_signup", "", action(`{"flow_token":"T","flow_action_data":{}}`), 400, 132018, "action.flow_action_data must be a non-empty JSON object"},
		{"flow parameter not an object", "event_signup", "", flow(`"action"`), 400, 100, "parameter 1 is not a valid parameter object"},
		{"url sub_type for the flow button", "event_signup", "", spring(signupBody, `{"type":"button","sub_type":"url","index":"0","parameters":[{"type":"text","text":"x"}]}`), 400, 131009, "Button at index 0 of type Url does not exist"},
		{"flow sub_type for the quick reply", "event_signup", "", spring(signupBody, `{"type":"button","sub_type":"flow","index":"1","parameters":[{"type":"action","action":{"flow_token":"T"}}]}`), 400, 131009, "Button at index 1 of type Flow does not exist"},
		{"flow sub_type for a url button", "spring_sale", "", spring(springHeader, springBody, `{"type":"button","sub_type":"flow","index":"0","parameters":[{"type":"action","action":{"flow_token":"T"}}]}`), 400, 131009, "Button at index 0 of type Flow does not exist"},

		// authentication
		{"code without the button", "login_code", "", spring(loginBody), 400, 132000, "code must be sent in the body and in the url button"},
		{"button code differs from the body's", "login_code", "", spring(loginBody, `{"type":"button","sub_type":"url","index":"0","parameters":[{"type":"text","text":"482914"}]}`), 400, 131009, "must be the same in the body and in the url button"},
		{"code of 16 characters", "login_code", "", spring(`{"type":"body","parameters":[{"type":"text","text":"1234567890123456"}]}`, `{"type":"button","sub_type":"url","index":"0","parameters":[{"type":"text","text":"1234567890123456"}]}`), 400, 132018, "at most 15"},
		{"two body parameters", "login_code", "", spring(`{"type":"body","parameters":[{"type":"text","text":"482913"},{"type":"text","text":"10"}]}`, loginButton), 400, 132000, "(2) does not match the expected number of params (1)"},
		{"code as currency", "login_code", "", spring(`{"type":"body","parameters":[{"type":"currency","currency":{"fallback_value":"1"}}]}`, loginButton), 400, 132012, "takes text"},
		{"code only in the button", "login_code", "", spring(loginButton), 400, 132000, "body: number of localizable_params (0)"},
		{"copy_code sub_type for the code", "login_code", "", spring(loginBody, `{"type":"button","sub_type":"copy_code","index":"0","parameters":[{"type":"coupon_code","coupon_code":"482913"}]}`), 400, 131009, "Button at index 0 of type Copy_code does not exist"},
	}
	s := newDefinitionServer(t)
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := sendBody(fmt.Sprint(16505550000+i), tt.template, cmp.Or(tt.lang, "en_US"), tt.components)
			if !json.Valid([]byte(body)) {
				t.Fatalf("test request is not JSON: %s", body)
			}
			a := do(s, http.MethodPost, path, token, body)
			if a.status != tt.wantStatus || a.code != tt.wantCode {
				t.Fatalf("got %v, want HTTP %d code %d", a, tt.wantStatus, tt.wantCode)
			}
			if d := details(a); !strings.Contains(d, tt.wantDetail) {
				t.Errorf("details %q do not say %q", d, tt.wantDetail)
			}
		})
	}
	if st := s.Stats(); st.Accepted != 0 || st.Requests != int64(len(tests)) {
		t.Errorf("accepted %d of %d refused requests", st.Accepted, st.Requests)
	}
}

// The error titles are Meta's, so logs read like the real API's.
func TestDefinitionErrorMessages(t *testing.T) {
	s := newDefinitionServer(t)
	for _, tt := range []struct {
		template, components, want string
	}{
		{"autumn_sale", `[]`, "(#132015) Template is Paused"},
		{"retired_offer", `[]`, "(#132016) Template is disabled"},
		{"old_promo", `[]`, "(#132001) Template name does not exist in the translation"},
		{"summer_teaser", `[]`, "(#132000) Number of parameters does not match the expected number of params"},
		{"spring_sale", `[{"type":"header","parameters":[{"type":"text","text":"x"}]}]`, "(#132012) Parameter format does not match format in the created template"},
		{"summer_teaser", `[{"type":"header","parameters":[{"type":"video","video":{"id":"1"}}]},{"type":"body","parameters":[{"type":"text","text":"a\nb"}]}]`, "(#132018) There was an issue with the parameters in your template"},
		{"summer_teaser", `[{"type":"header","parameters":[{"type":"video","video":{"id":"1"}}]},{"type":"body","parameters":[{"type":"text","text":` + js(strings.Repeat("x", 1025)) + `}]}]`, "(#132005) Translated text too long"},
		{"summer_teaser", `[{"type":"header","parameters":[{"type":"video","video":{}}]}]`, "(#131009) Parameter value is not valid"},
		{"summer_teaser", `[{"type":"header","parameters":[{"type":"video","video":{"id":"1"}}]},{"type":"body","parameters":[{"type":"text","text":""}]}]`, "(#131008) Required parameter is missing"},
	} {
		a := do(s, http.MethodPost, path, token, sendBody("16505551234", tt.template, "en_US", tt.components))
		var e errorBody
		json.Unmarshal(a.body, &e)
		if e.Error.Message != tt.want {
			t.Errorf("%s %s: message %q, want %q", tt.template, tt.components[:min(40, len(tt.components))], e.Error.Message, tt.want)
		}
	}
}

func TestDefinitionsBesideTemplates(t *testing.T) {
	s := New(Config{
		Token: token, Rate: -1, PairInterval: -1,
		Templates: []Template{
			{Name: "welcome", BodyParams: 1},
			{Name: "spring_sale", Languages: []string{"pt_BR"}, BodyParams: 2},
		},
		Definitions: DefaultTemplates(),
	})
	defer s.Close()
	var springOK string
	for _, v := range ValidSends() {
		if v.Template == "spring_sale" {
			springOK = v.Body("16505551234")
			break
		}
	}
	tests := []struct {
		name     string
		body     string
		wantCode int
	}{
		{"simple template, right count", msg("16505550001", "", "welcome", "en_US", 1), 0},
		{"simple template, wrong count", msg("16505550002", "", "welcome", "en_US", 2), 132000},
		{"definition, valid", springOK, 0},
		{"definition, checked beyond the count", msg("16505550003", "", "spring_sale", "en_US", 2), 132000},
		{"same name in the simple registry's language", msg("16505550004", "", "spring_sale", "pt_BR", 2), 0},
		{"same name, simple check applies", msg("16505550005", "", "spring_sale", "pt_BR", 1), 132000},
		{"definition in no registry's language", msg("16505550006", "", "spring_sale", "de", 2), 132001},
		{"in neither registry", msg("16505550007", "", "nope", "en_US", 0), 132001},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if a := do(s, http.MethodPost, path, token, tt.body); a.code != tt.wantCode {
				t.Errorf("got %v, want code %d", a, tt.wantCode)
			}
		})
	}
	t.Run("definitions only", func(t *testing.T) {
		s := New(Config{Definitions: DefaultTemplates()})
		defer s.Close()
		if a := do(s, http.MethodPost, path, token, msg("16505550008", "", "welcome", "en_US", 1)); a.code != 132001 {
			t.Errorf("a name in no definition: got %v, want 132001", a)
		}
	})
}

// The pricing category of status webhooks is the definition's.
func TestDefinitionCategory(t *testing.T) {
	var hooks bytes.Buffer
	s := New(Config{Rate: -1, PairInterval: -1, Definitions: FixtureDefinitions(), Webhooks: &hooks})
	want := map[string]string{}
	for i, v := range ValidSends() {
		a := do(s, http.MethodPost, path, token, v.Body(fmt.Sprint(16505550000+i)))
		if a.status != 200 {
			t.Fatalf("%s: %v", v.Name, a)
		}
		for _, d := range FixtureDefinitions() {
			if d.Name == v.Template {
				want[a.wamid] = strings.ToLower(d.Category)
			}
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, l := range lines(t, hooks.Bytes()) {
		w := parseWebhook(t, l)
		if w.Pricing == nil {
			continue
		}
		seen[w.Pricing.Category] = true
		if w.Pricing.Category != want[w.ID] {
			t.Errorf("%s: pricing category %q, want %q", w.ID, w.Pricing.Category, want[w.ID])
		}
	}
	for _, c := range []string{"marketing", "utility", "authentication"} {
		if !seen[c] {
			t.Errorf("no webhook priced %s", c)
		}
	}
}
