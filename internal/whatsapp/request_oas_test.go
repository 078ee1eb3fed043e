package whatsapp_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/whatsapp"
	"github.com/bulksend/bulksend/internal/whatsapp/internal/oas"
	"github.com/bulksend/bulksend/internal/whatsapp/template"
)

// TestRequestComponentsConformToOpenAPI builds the send request of each kind
// of template component from a definition, a mapping and a row, and checks
// it against Meta's document with its discriminators followed, so each
// parameter meets the schema of its type (plain "Message" validation looks
// no deeper than the component).
func TestRequestComponentsConformToOpenAPI(t *testing.T) {
	spec, err := oas.Load()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		definition string // components of an APPROVED definition, or the whole of it with "category"
		columns    string
		cells      []string
		want       string // template.components of the request
	}{
		{
			name:       "text header",
			definition: `[{"type":"HEADER","format":"TEXT","text":"Our {{1}} is on!"},{"type":"BODY","text":"Hi {{1}}"}]`,
			columns:    "header.text,name",
			cells:      []string{"Fall Sale", "Ana"},
			want: `[{"type":"header","parameters":[{"type":"text","text":"Fall Sale"}]},
			        {"type":"body","parameters":[{"type":"text","text":"Ana"}]}]`,
		},
		{
			name:       "image header by link",
			definition: `[{"type":"HEADER","format":"IMAGE"},{"type":"BODY","text":"Hi {{1}}"}]`,
			columns:    "name,header.image",
			cells:      []string{"Ana", "https://cdn.example.com/spring.jpg"},
			want: `[{"type":"header","parameters":[{"type":"image","image":{"link":"https://cdn.example.com/spring.jpg"}}]},
			        {"type":"body","parameters":[{"type":"text","text":"Ana"}]}]`,
		},
		{
			name:       "image header by media ID",
			definition: `[{"type":"HEADER","format":"IMAGE"},{"type":"BODY","text":"Hi {{1}}"}]`,
			columns:    "name,header.image",
			cells:      []string{"Ana", "1339522734477770"},
			want: `[{"type":"header","parameters":[{"type":"image","image":{"id":"1339522734477770"}}]},
			        {"type":"body","parameters":[{"type":"text","text":"Ana"}]}]`,
		},
		{
			name:       "video header",
			definition: `[{"type":"HEADER","format":"VIDEO"},{"type":"BODY","text":"Watch this, {{1}}"}]`,
			columns:    "header.video,name",
			cells:      []string{"https://cdn.example.com/teaser.mp4", "Ana"},
			want: `[{"type":"header","parameters":[{"type":"video","video":{"link":"https://cdn.example.com/teaser.mp4"}}]},
			        {"type":"body","parameters":[{"type":"text","text":"Ana"}]}]`,
		},
		{
			name:       "document header with file name",
			definition: `[{"type":"HEADER","format":"DOCUMENT"},{"type":"BODY","text":"Invoice {{1}} is ready"}]`,
			columns:    "invoice,header.document,header.filename",
			cells:      []string{"INV-1", "https://cdn.example.com/inv-1.pdf", "INV-1.pdf"},
			want: `[{"type":"header","parameters":[{"type":"document","document":{"link":"https://cdn.example.com/inv-1.pdf","filename":"INV-1.pdf"}}]},
			        {"type":"body","parameters":[{"type":"text","text":"INV-1"}]}]`,
		},
		{
			name:       "location header",
			definition: `[{"type":"HEADER","format":"LOCATION"},{"type":"BODY","text":"Order {{1}} is ready for pick-up"}]`,
			columns:    "order,header.latitude,header.longitude,header.name,header.address",
			cells:      []string{"A1", "52.520008", "13.404954", "Alexanderplatz store", "Alexanderplatz 1, 10178 Berlin"},
			want: `[{"type":"header","parameters":[{"type":"location","location":{"latitude":"52.520008","longitude":"13.404954","name":"Alexanderplatz store","address":"Alexanderplatz 1, 10178 Berlin"}}]},
			        {"type":"body","parameters":[{"type":"text","text":"A1"}]}]`,
		},
		{
			name:       "positional body",
			definition: `[{"type":"BODY","text":"Hi {{1}}, {{2}} off everything"},{"type":"FOOTER","text":"Reply STOP to opt out"}]`,
			columns:    "name,discount",
			cells:      []string{"Ana", "20%"},
			want:       `[{"type":"body","parameters":[{"type":"text","text":"Ana"},{"type":"text","text":"20%"}]}]`,
		},
		{
			name: "named body",
			definition: `{"category":"UTILITY","parameter_format":"NAMED","components":[
			  {"type":"BODY","text":"Hi {{first_name}}, order {{order_id}} ships today"}]}`,
			columns: "order_id,first_name",
			cells:   []string{"A-1", "Ana"},
			want: `[{"type":"body","parameters":[{"type":"text","parameter_name":"order_id","text":"A-1"},
			        {"type":"text","parameter_name":"first_name","text":"Ana"}]}]`,
		},
		{
			name: "URL button",
			definition: `[{"type":"BODY","text":"Hi {{1}}"},{"type":"BUTTONS","buttons":[
			  {"type":"URL","text":"Track","url":"https://shop.example.com/track/{{1}}"}]}]`,
			columns: "name,button.0.url",
			cells:   []string{"Ana", "A-1"},
			want: `[{"type":"body","parameters":[{"type":"text","text":"Ana"}]},
			        {"type":"button","sub_type":"url","index":"0","parameters":[{"type":"text","text":"A-1"}]}]`,
		},
		{
			name: "quick-reply button",
			definition: `[{"type":"BODY","text":"Hi {{1}}"},{"type":"BUTTONS","buttons":[
			  {"type":"QUICK_REPLY","text":"Stop promotions"}]}]`,
			columns: "name,button.0.payload",
			cells:   []string{"Ana", "STOP_PROMOS"},
			want: `[{"type":"body","parameters":[{"type":"text","text":"Ana"}]},
			        {"type":"button","sub_type":"quick_reply","index":"0","parameters":[{"type":"payload","payload":"STOP_PROMOS"}]}]`,
		},
		{
			name: "copy-code button",
			definition: `[{"type":"BODY","text":"Use code {{1}} for {{2}} off"},{"type":"BUTTONS","buttons":[
			  {"type":"QUICK_REPLY","text":"Unsubscribe"},{"type":"COPY_CODE","example":"25OFF"}]}]`,
			columns: "code,discount,button.1.coupon",
			cells:   []string{"25OFF", "25%", "25OFF"},
			want: `[{"type":"body","parameters":[{"type":"text","text":"25OFF"},{"type":"text","text":"25%"}]},
			        {"type":"button","sub_type":"copy_code","index":"1","parameters":[{"type":"coupon_code","coupon_code":"25OFF"}]}]`,
		},
		{
			name: "authentication code",
			definition: `{"category":"AUTHENTICATION","components":[
			  {"type":"BODY","text":"*{{1}}* is your verification code.","add_security_recommendation":true},
			  {"type":"FOOTER","text":"This code expires in 10 minutes.","code_expiration_minutes":10},
			  {"type":"BUTTONS","buttons":[{"type":"URL","text":"Copy code","url":"https://www.whatsapp.com/otp/code/?otp_type=COPY_CODE&code=otp{{1}}"}]}]}`,
			columns: "auth.code",
			cells:   []string{"J$FpnYnP"},
			want: `[{"type":"body","parameters":[{"type":"text","text":"J$FpnYnP"}]},
			        {"type":"button","sub_type":"url","index":"0","parameters":[{"type":"text","text":"J$FpnYnP"}]}]`,
		},
		{
			name: "Flow button with a token and the first screen's data",
			definition: `[{"type":"BODY","text":"Hi {{1}}, save your seat"},{"type":"BUTTONS","buttons":[
			  {"type":"FLOW","text":"Sign up","flow_id":"1399887766554433","flow_action":"NAVIGATE","navigate_screen":"WELCOME_SCREEN"}]}]`,
			columns: "name,button.0.flow_token,button.0.flow_action_data",
			cells:   []string{"Ana", "SIGNUP-A1", `{"first_name": "Ana", "seats": [1, 2], "vip": true}`},
			want: `[{"type":"body","parameters":[{"type":"text","text":"Ana"}]},
			        {"type":"button","sub_type":"flow","index":"0","parameters":[{"type":"action","action":
			          {"flow_token":"SIGNUP-A1","flow_action_data":{"first_name":"Ana","seats":[1,2],"vip":true}}}]}]`,
		},
		{
			name: "Flow button with a token only, beside a quick reply",
			definition: `[{"type":"BODY","text":"Hi {{1}}"},{"type":"BUTTONS","buttons":[
			  {"type":"QUICK_REPLY","text":"Not interested"},{"type":"FLOW","text":"Sign up","flow_id":"1399887766554433"}]}]`,
			columns: "name,button.1.flow_token,button.0.payload",
			cells:   []string{"Ana", "SIGNUP-A1", "NO"},
			want: `[{"type":"body","parameters":[{"type":"text","text":"Ana"}]},
			        {"type":"button","sub_type":"quick_reply","index":"0","parameters":[{"type":"payload","payload":"NO"}]},
			        {"type":"button","sub_type":"flow","index":"1","parameters":[{"type":"action","action":{"flow_token":"SIGNUP-A1"}}]}]`,
		},
		{
			name: "Flow button with data only",
			definition: `[{"type":"BODY","text":"Hi {{1}}"},{"type":"BUTTONS","buttons":[
			  {"type":"FLOW","text":"Sign up","flow_id":"1399887766554433"}]}]`,
			columns: "name,button.0.flow_action_data",
			cells:   []string{"Ana", `{"source":"spring"}`},
			want: `[{"type":"body","parameters":[{"type":"text","text":"Ana"}]},
			        {"type":"button","sub_type":"flow","index":"0","parameters":[{"type":"action","action":{"flow_action_data":{"source":"spring"}}}]}]`,
		},
		{
			// Meta's ButtonComponent needs a parameter: a Flow button
			// given nothing in this row is left out.
			name: "Flow button given nothing",
			definition: `[{"type":"BODY","text":"Hi {{1}}"},{"type":"BUTTONS","buttons":[
			  {"type":"FLOW","text":"Sign up","flow_id":"1399887766554433"}]}]`,
			columns: "name,button.0.flow_token,button.0.flow_action_data",
			cells:   []string{"Ana", "", ""},
			want:    `[{"type":"body","parameters":[{"type":"text","text":"Ana"}]}]`,
		},
		{
			name: "Flow button without columns",
			definition: `[{"type":"BODY","text":"Hi {{1}}"},{"type":"BUTTONS","buttons":[
			  {"type":"FLOW","text":"Sign up","flow_id":"1399887766554433"}]}]`,
			columns: "name",
			cells:   []string{"Ana"},
			want:    `[{"type":"body","parameters":[{"type":"text","text":"Ana"}]}]`,
		},
		{
			name: "every button index",
			definition: `[{"type":"BODY","text":"Pick one"},{"type":"BUTTONS","buttons":[
			  {"type":"QUICK_REPLY","text":"0"},{"type":"QUICK_REPLY","text":"1"},{"type":"QUICK_REPLY","text":"2"},{"type":"QUICK_REPLY","text":"3"},
			  {"type":"QUICK_REPLY","text":"4"},{"type":"QUICK_REPLY","text":"5"},{"type":"QUICK_REPLY","text":"6"},{"type":"QUICK_REPLY","text":"7"},
			  {"type":"QUICK_REPLY","text":"8"},{"type":"URL","text":"9","url":"https://shop.example.com/{{1}}"}]}]`,
			columns: "button.9.url,button.8.payload,button.7.payload,button.0.payload",
			cells:   []string{"x", "P8", "P7", "P0"},
			want: `[{"type":"button","sub_type":"quick_reply","index":"0","parameters":[{"type":"payload","payload":"P0"}]},
			        {"type":"button","sub_type":"quick_reply","index":"7","parameters":[{"type":"payload","payload":"P7"}]},
			        {"type":"button","sub_type":"quick_reply","index":"8","parameters":[{"type":"payload","payload":"P8"}]},
			        {"type":"button","sub_type":"url","index":"9","parameters":[{"type":"text","text":"x"}]}]`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			def := definition(t, tt.definition)
			m, err := template.New(template.Input{Columns: strings.Split(tt.columns, ",")}, &def)
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			if why := m.Validate(tt.cells); why != "" {
				t.Fatalf("Validate: %s", why)
			}
			msg := campaign.Message{Row: 3, From: "106540352242922", To: "+447700900123",
				Params: tt.cells, Ref: campaign.Ref{Campaign: "abc", Row: 3}}
			body, err := json.Marshal(whatsapp.NewRequest(msg, def.Name, def.Language, m))
			if err != nil {
				t.Fatal(err)
			}
			if err := spec.ValidateTemplateMessage(body); err != nil {
				t.Fatalf("request %s does not conform to Meta's document: %v", body, err)
			}
			if got := components(t, body); !reflect.DeepEqual(got, decode(t, tt.want)) {
				t.Errorf("components\n got %s\nwant %s", mustJSON(got), mustJSON(decode(t, tt.want)))
			}
			mustRefuseWithoutValues(t, spec, body)
		})
	}
}

// TestOldCheckpointRequestConformsToOpenAPI: a checkpoint made before
// mappings were stored sends its params as positional body text.
func TestOldCheckpointRequestConformsToOpenAPI(t *testing.T) {
	spec, err := oas.Load()
	if err != nil {
		t.Fatal(err)
	}
	msg := campaign.Message{From: "1", To: "+15551234567", Params: []string{"Ana", "WELCOME25"}}
	body, err := json.Marshal(whatsapp.NewRequest(msg, "hello", "en", nil))
	if err != nil {
		t.Fatal(err)
	}
	if err := spec.ValidateTemplateMessage(body); err != nil {
		t.Fatalf("request %s does not conform to Meta's document: %v", body, err)
	}
	want := `[{"type":"body","parameters":[{"type":"text","text":"Ana"},{"type":"text","text":"WELCOME25"}]}]`
	if got := components(t, body); !reflect.DeepEqual(got, decode(t, want)) {
		t.Errorf("components\n got %s\nwant %s", mustJSON(got), want)
	}
	mustRefuseWithoutValues(t, spec, body)
}

// mustRefuseWithoutValues shows the check looks into every parameter:
// dropping the value field its type names (text, image, payload…) from any
// one of them makes the request fail, naming that parameter.
func mustRefuseWithoutValues(t *testing.T, spec *oas.Spec, body []byte) {
	t.Helper()
	comps, _ := components(t, body).([]any)
	for i, c := range comps {
		params, _ := c.(map[string]any)["parameters"].([]any)
		for j, p := range params {
			var req map[string]any
			if err := json.Unmarshal(body, &req); err != nil {
				t.Fatal(err)
			}
			param := req["template"].(map[string]any)["components"].([]any)[i].(map[string]any)["parameters"].([]any)[j].(map[string]any)
			typ, _ := p.(map[string]any)["type"].(string)
			if _, ok := param[typ]; !ok {
				t.Errorf("component %d parameter %d of type %q has no %q field", i, j, typ, typ)
				continue
			}
			delete(param, typ)
			err := spec.ValidateTemplateMessage(mustJSON(req))
			where := fmt.Sprintf("template.components[%d].parameters[%d]", i, j)
			if err == nil || !strings.Contains(err.Error(), where) {
				t.Errorf("without its %q field, parameter %s: %v, want an error naming it", typ, where, err)
			}
		}
	}
}

// definition reads an approved definition: a JSON object with its own
// category and format, or just the components of a marketing template.
func definition(t *testing.T, s string) template.Definition {
	t.Helper()
	if strings.HasPrefix(s, "[") {
		s = `{"category":"MARKETING","components":` + s + `}`
	}
	var fields map[string]any
	if err := json.Unmarshal([]byte(s), &fields); err != nil {
		t.Fatalf("definition %s: %v", s, err)
	}
	fields["name"], fields["language"], fields["status"] = "t", "en_US", "APPROVED"
	defs, err := template.ParseDefinitions(mustJSON(map[string]any{"data": []any{fields}}))
	if err != nil {
		t.Fatal(err)
	}
	return defs[0]
}

func components(t *testing.T, body []byte) any {
	t.Helper()
	var req struct {
		Template struct {
			Components any `json:"components"`
		} `json:"template"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	return req.Template.Components
}

func decode(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return v
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
