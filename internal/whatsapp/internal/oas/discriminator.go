package oas

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// ValidateTemplateMessage checks a template message's send request as Meta's
// document means it, discriminators included. Plain validation against
// "Message" treats OpenAPI's discriminator as the annotation it is, so it
// checks template components only against TemplateComponent, whose
// parameters may be anything. Here, wherever a schema on the way down the
// message has a discriminator, the value there is validated against the
// schema its mapping names for the value's type: the message against
// TemplateMessage, each template component against HeaderComponent,
// BodyComponent or ButtonComponent, each parameter against the schema
// ParameterObject's or ButtonParameterObject's mapping names (TextParameter,
// ImageParameter, ButtonPayloadParameter…). The mappings are read from the
// document. A body it accepts is also valid against "Message".
//
// An error names where the value is, as in
// "template.components[2].parameters[0]: validate against TextParameter: …",
// and wraps a *jsonschema.ValidationError when the value does not conform
// to a schema. A message of another type than template is an error.
func (s *Spec) ValidateTemplateMessage(body []byte) error {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("validate template message: body is not JSON: %w", err)
	}
	if obj, _ := v.(map[string]any); obj["type"] != "template" {
		return fmt.Errorf("validate template message: type is %v, not template", obj["type"])
	}
	// Following Message's discriminator first checks against
	// TemplateMessage alone, whose errors are readable: "Message" reports
	// the failure of each of its eleven oneOf branches.
	if err := s.walk("Message", v, ""); err != nil {
		return err
	}
	return s.validate("Message", v)
}

// walk validates v, found at path at, against the schema that name's
// discriminator picks for it, then does the same for the values below v
// whose schemas are references to components. A discriminator is followed
// once per value: the schema it picks includes name through allOf, so
// following it again would go round for ever. (That is also why this is a
// walk and not a jsonschema vocabulary keyword.)
func (s *Spec) walk(name string, v any, at string) error {
	target, err := s.discriminate(name, v)
	if err != nil {
		return fmt.Errorf("%s: %w", where(at), err)
	}
	if target != name {
		if err := s.validate(target, v); err != nil {
			return fmt.Errorf("%s: %w", where(at), err)
		}
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	var errs []error
	for _, r := range s.refs(target) {
		val, ok := obj[r.prop]
		if !ok {
			continue
		}
		if !r.items {
			errs = append(errs, s.walk(r.schema, val, at+"."+r.prop))
			continue
		}
		arr, _ := val.([]any)
		for i, e := range arr {
			errs = append(errs, s.walk(r.schema, e, fmt.Sprintf("%s.%s[%d]", at, r.prop, i)))
		}
	}
	return errors.Join(errs...)
}

func where(at string) string {
	if at == "" {
		return "message"
	}
	return strings.TrimPrefix(at, ".")
}

// discriminate returns the component that name's discriminator maps v to,
// or name itself when name has no discriminator. A value the mapping does
// not name is an error: OpenAPI's implicit mapping by schema name never
// applies to Meta's lowercase types.
func (s *Spec) discriminate(name string, v any) (string, error) {
	sch, _ := s.components()[name].(map[string]any)
	d, ok := sch["discriminator"].(map[string]any)
	if !ok {
		return name, nil
	}
	prop, _ := d["propertyName"].(string)
	obj, _ := v.(map[string]any)
	val, ok := obj[prop].(string)
	if !ok {
		return "", fmt.Errorf("%s's discriminator needs a string %q", name, prop)
	}
	mapping, _ := d["mapping"].(map[string]any)
	ref, ok := mapping[val].(string)
	if !ok {
		return "", fmt.Errorf("%s %q has no schema in %s's discriminator mapping", prop, val, name)
	}
	target, ok := componentName(ref)
	if !ok {
		return "", fmt.Errorf("%s's discriminator maps %q to %q, not a component schema", name, val, ref)
	}
	return target, nil
}

// ref is a property of a schema whose value (or, with items, each of
// whose elements) is described by a component schema.
type ref struct {
	prop   string
	schema string
	items  bool
}

// refs lists the properties of the component called name, including those
// of its allOf parts, that refer to a component schema directly or through
// items, sorted by property.
func (s *Spec) refs(name string) []ref {
	var out []ref
	seen := map[string]bool{}
	var collect func(sch map[string]any)
	collect = func(sch map[string]any) {
		if r, ok := sch["$ref"].(string); ok {
			if n, ok := componentName(r); ok && !seen[n] {
				seen[n] = true
				c, _ := s.components()[n].(map[string]any)
				collect(c)
			}
		}
		props, _ := sch["properties"].(map[string]any)
		for p, ps := range props {
			ps, _ := ps.(map[string]any)
			if r, ok := ps["$ref"].(string); ok {
				if n, ok := componentName(r); ok {
					out = append(out, ref{prop: p, schema: n})
				}
			}
			items, _ := ps["items"].(map[string]any)
			if r, ok := items["$ref"].(string); ok {
				if n, ok := componentName(r); ok {
					out = append(out, ref{prop: p, schema: n, items: true})
				}
			}
		}
		all, _ := sch["allOf"].([]any)
		for _, a := range all {
			a, _ := a.(map[string]any)
			collect(a)
		}
	}
	seen[name] = true
	c, _ := s.components()[name].(map[string]any)
	collect(c)
	slices.SortFunc(out, func(a, b ref) int {
		if c := strings.Compare(a.prop, b.prop); c != 0 {
			return c
		}
		if c := strings.Compare(a.schema, b.schema); c != 0 || a.items == b.items {
			return c
		}
		if a.items {
			return 1
		}
		return -1
	})
	return slices.Compact(out)
}

// componentName returns X for "#/components/schemas/X".
func componentName(ref string) (string, bool) {
	n, ok := strings.CutPrefix(ref, "#/components/schemas/")
	if !ok || n == "" || strings.Contains(n, "/") {
		return "", false
	}
	return n, true
}
