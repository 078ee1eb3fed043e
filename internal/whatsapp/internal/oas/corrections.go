package oas

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
)

// correction changes one value of Meta's document in the loaded copy,
// where the schema contradicts Meta's own documentation of the request.
type correction struct {
	Pointer string // JSON pointer (RFC 6901) of the value set
	Was     string // Meta's value there, as JSON; "" if it is absent
	Value   string // the value set, as JSON
	Why     string // the Meta page that documents the real shape
}

const schemas = "/components/schemas/"

// buttonSubTypes is Meta's sub_type enum plus copy_code and flow.
const buttonSubTypes = `["quick_reply", "url", "catalog", "copy_code", "flow"]`

// subTypesWhy is why buttonSubTypes corrects Meta's enum.
const subTypesWhy = "Coupon code templates: a copy-code button is sent with sub_type copy_code; Flows templates and the file's own example Send Flow Template Message: a Flow button with sub_type flow"

// corrections are applied in order by LoadFile. Each one is needed: the
// tests send Meta's documented shape through the document without it.
// Was pins the value Meta's file has, so a newer file that fixes or changes
// a schema makes LoadFile fail rather than be silently overwritten.
var corrections = []correction{
	{
		Pointer: schemas + "TemplateComponent/properties/index/pattern",
		Was:     `"^[2-6, 11-14]$"`,
		Value:   `"^[0-9]$"`,
		Why:     "Messages API reference: up to 10 buttons, index 0 to 9 (Meta's character class rejects 0, 7, 8 and 9)",
	},
	{
		Pointer: schemas + "ButtonComponent/allOf/1/properties/index/pattern",
		Was:     `"^[2-6, 11-14]$"`,
		Value:   `"^[0-9]$"`,
		Why:     "Messages API reference: up to 10 buttons, index 0 to 9 (Meta's character class rejects 0, 7, 8 and 9)",
	},
	{
		Pointer: schemas + "TemplateComponent/properties/sub_type/enum",
		Was:     `["quick_reply", "url", "catalog"]`,
		Value:   buttonSubTypes,
		Why:     subTypesWhy,
	},
	{
		Pointer: schemas + "ButtonComponent/allOf/1/properties/sub_type/enum",
		Was:     `["quick_reply", "url", "catalog"]`,
		Value:   buttonSubTypes,
		Why:     subTypesWhy,
	},
	{
		Pointer: schemas + "ButtonParameterObject/properties/type/enum",
		Was:     `["payload", "text"]`,
		Value:   `["payload", "text", "coupon_code", "action"]`,
		Why:     "Coupon code templates: the copy-code button's parameter is {type: coupon_code, coupon_code}; Send Flow Template Message: a Flow button's is {type: action, action}",
	},
	{
		Pointer: schemas + "ButtonParameterObject/discriminator/mapping/coupon_code",
		Value:   `"#/components/schemas/ButtonCouponCodeParameter"`,
		Why:     "Coupon code templates: the copy-code button's parameter is {type: coupon_code, coupon_code}",
	},
	{
		Pointer: schemas + "ButtonCouponCodeParameter",
		Value: `{"allOf": [
			{"$ref": "#/components/schemas/ButtonParameterObject"},
			{"type": "object", "required": ["coupon_code"], "properties": {
				"type": {"enum": ["coupon_code"]},
				"coupon_code": {"type": "string"}}}]}`,
		Why: "Coupon code templates: the copy-code button's parameter is {type: coupon_code, coupon_code}",
	},
	{
		Pointer: schemas + "ButtonParameterObject/discriminator/mapping/action",
		Value:   `"#/components/schemas/ButtonActionParameter"`,
		Why:     "Send Flow Template Message (the file's own example): a Flow button's parameter is {type: action, action: {flow_token, flow_action_data}}",
	},
	{
		// Both of the action's fields are optional (Flows templates);
		// flow_action_data is the data of the Flow's first screen, which
		// Meta takes only as a non-empty object (Flow messages).
		Pointer: schemas + "ButtonActionParameter",
		Value: `{"allOf": [
			{"$ref": "#/components/schemas/ButtonParameterObject"},
			{"type": "object", "required": ["action"], "properties": {
				"type": {"enum": ["action"]},
				"action": {"type": "object", "properties": {
					"flow_token": {"type": "string", "minLength": 1},
					"flow_action_data": {"type": "object", "minProperties": 1}}}}}]}`,
		Why: "Send Flow Template Message (the file's own example): a Flow button's parameter is {type: action, action: {flow_token, flow_action_data}}",
	},
	{
		Pointer: schemas + "ParameterObject/properties/type/enum",
		Was:     `["currency", "date_time", "document", "image", "text", "video"]`,
		Value:   `["currency", "date_time", "document", "image", "text", "video", "location"]`,
		Why:     "Location templates: a location header's parameter is {type: location, location}",
	},
	{
		Pointer: schemas + "ParameterObject/discriminator/mapping/location",
		Value:   `"#/components/schemas/LocationParameter"`,
		Why:     "Location templates: a location header's parameter is {type: location, location}",
	},
	{
		// The location object is LocationMessage's (coordinates as
		// strings), with the coordinates required as Location messages
		// documents them.
		Pointer: schemas + "LocationParameter",
		Value: `{"allOf": [
			{"$ref": "#/components/schemas/ParameterObject"},
			{"type": "object", "required": ["location"], "properties": {
				"type": {"enum": ["location"]},
				"location": {
					"$ref": "#/components/schemas/LocationMessage/allOf/1/properties/location",
					"required": ["latitude", "longitude"]}}}]}`,
		Why: "Location templates: a location header's parameter is {type: location, location: {latitude, longitude, name, address}}",
	},
}

// apply sets c's value in doc. The pointer's parent must exist and the
// current value must be c.Was.
func (c correction) apply(doc map[string]any) error {
	was, value, err := c.values()
	if err != nil {
		return err
	}
	tokens, err := splitPointer(c.Pointer)
	if err != nil {
		return err
	}
	var parent any = doc
	for _, tok := range tokens[:len(tokens)-1] {
		parent, err = step(parent, tok)
		if err != nil {
			return fmt.Errorf("correction %s: %w", c.Pointer, err)
		}
	}
	last := tokens[len(tokens)-1]
	switch p := parent.(type) {
	case map[string]any:
		cur, ok := p[last]
		if !ok && was != nil || ok && !reflect.DeepEqual(cur, was) {
			return fmt.Errorf("correction %s: the document has %s there, not %s: review the correction", c.Pointer, show(cur, ok), show(was, was != nil))
		}
		p[last] = value
	case []any:
		i, err := index(p, last)
		if err != nil {
			return fmt.Errorf("correction %s: %w", c.Pointer, err)
		}
		if !reflect.DeepEqual(p[i], was) {
			return fmt.Errorf("correction %s: the document has %s there, not %s: review the correction", c.Pointer, show(p[i], true), show(was, was != nil))
		}
		p[i] = value
	default:
		return fmt.Errorf("correction %s: parent is %T, not an object or array", c.Pointer, parent)
	}
	return nil
}

// values decodes Was and Value into the types of the converted YAML
// document (numbers are not used by any correction).
func (c correction) values() (was, value any, err error) {
	if c.Was != "" {
		if err := json.Unmarshal([]byte(c.Was), &was); err != nil {
			return nil, nil, fmt.Errorf("correction %s: Was: %w", c.Pointer, err)
		}
	}
	if err := json.Unmarshal([]byte(c.Value), &value); err != nil {
		return nil, nil, fmt.Errorf("correction %s: Value: %w", c.Pointer, err)
	}
	return was, value, nil
}

func show(v any, present bool) string {
	if !present {
		return "nothing"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// splitPointer returns the unescaped reference tokens of a JSON pointer
// with at least one token.
func splitPointer(p string) ([]string, error) {
	rest, ok := strings.CutPrefix(p, "/")
	if !ok {
		return nil, fmt.Errorf("correction %q: a JSON pointer starts with /", p)
	}
	tokens := strings.Split(rest, "/")
	for i, t := range tokens {
		tokens[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	return tokens, nil
}

func step(v any, tok string) (any, error) {
	switch v := v.(type) {
	case map[string]any:
		next, ok := v[tok]
		if !ok {
			return nil, fmt.Errorf("no %q in the document", tok)
		}
		return next, nil
	case []any:
		i, err := index(v, tok)
		if err != nil {
			return nil, err
		}
		return v[i], nil
	}
	return nil, fmt.Errorf("%q: parent is %T, not an object or array", tok, v)
}

func index(a []any, tok string) (int, error) {
	i, err := strconv.Atoi(tok)
	if err != nil || i < 0 || i >= len(a) || tok != strconv.Itoa(i) {
		return 0, fmt.Errorf("%q is not an index of an array of %d", tok, len(a))
	}
	return i, nil
}
