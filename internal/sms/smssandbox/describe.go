package smssandbox

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// Paging: MaxResults is 1 to 100 on all three operations (API reference);
// AWS does not document its default, the sandbox uses the maximum.
const maxResults = 100

// monthly leasing prices by number type, in US dollars: the sandbox's own.
var leasing = map[string]string{
	"TEN_DLC": "2.00", "TOLL_FREE": "2.00", "SHORT_CODE": "995.00", "LONG_CODE": "1.00", "SIMULATOR": "0.00",
}

// describeOptedOut handles DescribeOptedOutNumbers.
func (s *Server) describeOptedOut(body []byte, region string) (any, *apiError) {
	var req optedOutRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, newError(http.StatusBadRequest, typeSerialization, "%s", err)
	}
	if req.OptOutListName == nil {
		return nil, missing("OptOutListName")
	}
	name := *req.OptOutListName
	if !validName(name, 256, "") {
		return nil, invalidField("OptOutListName", name, "Member must satisfy regular expression pattern: [A-Za-z0-9_:/-]+ and have length between 1 and 256")
	}
	if typ, id, ok := arnResource(name); ok && typ == "opt-out-list" {
		name = id
	}
	phones, ok := s.lists[name]
	if !ok {
		return nil, notFound("opt-out-list", name)
	}
	if len(req.OptedOutNumbers) > 5 {
		return nil, invalidField("OptedOutNumbers", fmt.Sprintf("%d items", len(req.OptedOutNumbers)), "Member must have length less than or equal to 5")
	}
	for _, p := range req.OptedOutNumbers {
		if !isPhone(p) {
			return nil, invalidField("OptedOutNumbers", p, `Member must satisfy regular expression pattern: \+?[1-9][0-9]{1,18}`)
		}
	}
	if e := checkFilters(req.Filters, []string{"end-user-opted-out"}); e != nil {
		return nil, e
	}
	var rows []optedOutNumber
	for _, p := range phones {
		if len(req.OptedOutNumbers) > 0 && !slices.ContainsFunc(req.OptedOutNumbers, func(q string) bool { return e164(q) == p }) {
			continue
		}
		// Every entry opted out by replying STOP.
		if !matches(req.Filters, func(string) []string { return []string{"true"} }) {
			continue
		}
		rows = append(rows, optedOutNumber{OptedOutNumber: p, OptedOutTimestamp: s.start.Unix(), EndUserOptedOut: true})
	}
	out, next, e := page(rows, req.NextToken, req.MaxResults, "opt-out-list/"+name)
	if e != nil {
		return nil, e
	}
	return optedOutResponse{
		OptOutListArn:   arn(region, "opt-out-list/"+name),
		OptOutListName:  name,
		OptedOutNumbers: nonNil(out),
		NextToken:       next,
	}, nil
}

// describePhoneNumbers handles DescribePhoneNumbers. Without Numbers or
// Pools (any identity taken) the account lists no numbers, but a number
// asked for by a phone-… ID or its ARN is described as a TEN_DLC number on
// the Default list, so a client's preflight works against the permissive
// sandbox.
func (s *Server) describePhoneNumbers(body []byte, region string) (any, *apiError) {
	var req phoneNumbersRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, newError(http.StatusBadRequest, typeSerialization, "%s", err)
	}
	if e := checkIDs("PhoneNumberIds", req.PhoneNumberIDs, req.Owner); e != nil {
		return nil, e
	}
	if e := checkFilters(req.Filters, []string{"status", "iso-country-code", "message-type", "number-capability", "number-type",
		"two-way-enabled", "self-managed-opt-outs-enabled", "opt-out-list-name", "deletion-protection-enabled", "two-way-channel-arn"}); e != nil {
		return nil, e
	}
	var all []phoneNumberInfo
	if len(req.PhoneNumberIDs) > 0 {
		for _, want := range req.PhoneNumberIDs {
			key := want
			if typ, id, ok := arnResource(want); ok && typ == "phone-number" {
				key = id
			}
			if n := s.number(key); n.ID == key {
				all = append(all, s.numberInfo(n, region))
			} else if !s.listed && strings.HasPrefix(key, "phone-") {
				n := Number{ID: key, PhoneNumber: synthPhone(key), Type: "TEN_DLC", OptOutList: defaultList}
				all = append(all, s.numberInfo(n, region))
			} else {
				return nil, notFound("phone-number", want)
			}
		}
	} else if deref(req.Owner) != "SHARED" {
		for _, n := range s.numbers {
			all = append(all, s.numberInfo(n, region))
		}
	}
	var rows []phoneNumberInfo
	for _, n := range all {
		if matches(req.Filters, func(name string) []string { return numberAttr(n, name) }) {
			rows = append(rows, n)
		}
	}
	out, next, e := page(rows, req.NextToken, req.MaxResults, "phone-numbers")
	if e != nil {
		return nil, e
	}
	return phoneNumbersResponse{PhoneNumbers: nonNil(out), NextToken: next}, nil
}

func (s *Server) numberInfo(n Number, region string) phoneNumberInfo {
	info := phoneNumberInfo{
		PhoneNumberArn:      arn(region, "phone-number/"+n.ID),
		PhoneNumberID:       n.ID,
		PhoneNumber:         n.PhoneNumber,
		Status:              "ACTIVE",
		IsoCountryCode:      isoCountry(n.PhoneNumber),
		MessageType:         "TRANSACTIONAL",
		NumberCapabilities:  []string{"SMS"},
		NumberType:          n.Type,
		MonthlyLeasingPrice: leasing[n.Type],
		OptOutListName:      n.OptOutList,
		CreatedTimestamp:    s.start.Unix(),
	}
	for _, p := range s.pools {
		if slices.Contains(p.Numbers, n.ID) || slices.Contains(p.Numbers, n.PhoneNumber) {
			info.PoolID = p.ID
			break
		}
	}
	return info
}

// numberAttr is the value of a PhoneNumberFilter attribute.
func numberAttr(n phoneNumberInfo, name string) []string {
	switch name {
	case "status":
		return []string{n.Status}
	case "iso-country-code":
		return []string{n.IsoCountryCode}
	case "message-type":
		return []string{n.MessageType}
	case "number-capability":
		return n.NumberCapabilities
	case "number-type":
		return []string{n.NumberType}
	case "two-way-enabled":
		return []string{strconv.FormatBool(n.TwoWayEnabled)}
	case "self-managed-opt-outs-enabled":
		return []string{strconv.FormatBool(n.SelfManagedOptOutsEnabled)}
	case "opt-out-list-name":
		return []string{n.OptOutListName}
	case "deletion-protection-enabled":
		return []string{strconv.FormatBool(n.DeletionProtectionEnabled)}
	}
	return nil // two-way-channel-arn: none
}

// describePools handles DescribePools, with the same leniency as
// describePhoneNumbers for pool-… IDs when nothing is listed.
func (s *Server) describePools(body []byte, region string) (any, *apiError) {
	var req poolsRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, newError(http.StatusBadRequest, typeSerialization, "%s", err)
	}
	if e := checkIDs("PoolIds", req.PoolIDs, req.Owner); e != nil {
		return nil, e
	}
	if e := checkFilters(req.Filters, []string{"status", "message-type", "two-way-enabled", "self-managed-opt-outs-enabled",
		"opt-out-list-name", "shared-routes-enabled", "deletion-protection-enabled", "two-way-channel-arn"}); e != nil {
		return nil, e
	}
	info := func(p Pool) poolInfo {
		return poolInfo{
			PoolArn: arn(region, "pool/"+p.ID), PoolID: p.ID, Status: "ACTIVE", MessageType: "TRANSACTIONAL",
			OptOutListName: p.OptOutList, CreatedTimestamp: s.start.Unix(),
		}
	}
	var all []poolInfo
	if len(req.PoolIDs) > 0 {
		for _, want := range req.PoolIDs {
			key := want
			if typ, id, ok := arnResource(want); ok && typ == "pool" {
				key = id
			}
			i := slices.IndexFunc(s.pools, func(p Pool) bool { return p.ID == key })
			switch {
			case i >= 0:
				all = append(all, info(s.pools[i]))
			case !s.listed && strings.HasPrefix(key, "pool-"):
				all = append(all, info(Pool{ID: key, OptOutList: defaultList}))
			default:
				return nil, notFound("pool", want)
			}
		}
	} else if deref(req.Owner) != "SHARED" {
		for _, p := range s.pools {
			all = append(all, info(p))
		}
	}
	var rows []poolInfo
	for _, p := range all {
		attr := func(name string) []string {
			switch name {
			case "status":
				return []string{p.Status}
			case "message-type":
				return []string{p.MessageType}
			case "opt-out-list-name":
				return []string{p.OptOutListName}
			case "two-way-enabled", "self-managed-opt-outs-enabled", "shared-routes-enabled", "deletion-protection-enabled":
				return []string{"false"}
			}
			return nil
		}
		if matches(req.Filters, attr) {
			rows = append(rows, p)
		}
	}
	out, next, e := page(rows, req.NextToken, req.MaxResults, "pools")
	if e != nil {
		return nil, e
	}
	return poolsResponse{Pools: nonNil(out), NextToken: next}, nil
}

// checkIDs checks PhoneNumberIds or PoolIds: at most 5, each a name or
// ARN, not beside Owner.
func checkIDs(field string, ids []string, owner *string) *apiError {
	if owner != nil && *owner != "SELF" && *owner != "SHARED" {
		return invalidField("Owner", *owner, "Member must satisfy enum value set: [SELF, SHARED]")
	}
	if len(ids) == 0 {
		return nil
	}
	if owner != nil {
		return validation("PARAMETERS_CANNOT_BE_USED_TOGETHER", field, "%s and Owner cannot be used together.", field)
	}
	if len(ids) > 5 {
		return invalidField(field, fmt.Sprintf("%d items", len(ids)), "Member must have length less than or equal to 5")
	}
	for _, id := range ids {
		if !validName(id, 256, "") {
			return invalidField(field, id, "Member must satisfy regular expression pattern: [A-Za-z0-9_:/-]+ and have length between 1 and 256")
		}
	}
	return nil
}

// checkFilters checks filter names against the operation's enum; each
// filter needs 1 to 20 values.
func checkFilters(fs []filter, names []string) *apiError {
	if len(fs) > 20 {
		return invalidField("Filters", fmt.Sprintf("%d items", len(fs)), "Member must have length less than or equal to 20")
	}
	for i, f := range fs {
		field := fmt.Sprintf("Filters.%d.member", i+1)
		if !slices.Contains(names, f.Name) {
			return invalidField(field+".Name", f.Name, "Member must satisfy enum value set: ["+strings.Join(names, ", ")+"]")
		}
		if len(f.Values) == 0 || len(f.Values) > 20 {
			return invalidField(field+".Values", fmt.Sprintf("%d items", len(f.Values)), "Member must have length between 1 and 20")
		}
	}
	return nil
}

// matches reports whether an item whose attributes attr returns passes
// every filter: one of its values among each filter's values.
func matches(fs []filter, attr func(name string) []string) bool {
	for _, f := range fs {
		if !slices.ContainsFunc(attr(f.Name), func(v string) bool { return slices.Contains(f.Values, v) }) {
			return false
		}
	}
	return true
}

// page returns a page of rows from the one token names and the token of
// the next page ("" on the last). A token is opaque to clients: here the
// scope it belongs to and an offset.
func page[T any](rows []T, token *string, maxRes *int64, scope string) ([]T, string, *apiError) {
	size := maxResults
	if maxRes != nil {
		if *maxRes < 1 || *maxRes > maxResults {
			return nil, "", invalidField("MaxResults", strconv.FormatInt(*maxRes, 10), "Member must have value between 1 and 100")
		}
		size = int(*maxRes)
	}
	off := 0
	if token != nil {
		b, err := base64.RawURLEncoding.DecodeString(*token)
		sc, n, ok := strings.Cut(string(b), "\x00")
		o, err2 := strconv.Atoi(n)
		if err != nil || !ok || sc != scope || err2 != nil || o < 0 || o > len(rows) {
			return nil, "", validation("INVALID_NEXT_TOKEN", "NextToken", "The NextToken is not valid.")
		}
		off = o
	}
	end := min(off+size, len(rows))
	next := ""
	if end < len(rows) {
		next = base64.RawURLEncoding.EncodeToString([]byte(scope + "\x00" + strconv.Itoa(end)))
	}
	return rows[off:end], next, nil
}

// nonNil makes an empty list encode as [], as AWS sends it.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func hash16(s string) uint16 {
	h := hexID(s)
	v, _ := strconv.ParseUint(h[:4], 16, 16)
	return uint16(v)
}
