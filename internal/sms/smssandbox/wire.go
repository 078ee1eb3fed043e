package smssandbox

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// Wire shapes of pinpoint-sms-voice-v2 under the AWS JSON 1.0 protocol, as
// the Go SDK (service/pinpointsmsvoicev2 v1.29.1: serializers.go,
// deserializers.go, types) writes and reads them. Members are PascalCase,
// timestamps epoch seconds as JSON numbers.

const (
	contentType  = "application/x-amz-json-1.0"
	targetPrefix = "PinpointSMSVoiceV2."
)

// sendRequest is SendTextMessage's input. Keyword, ProtectConfigurationId,
// DestinationCountryParameters and MessageFeedbackEnabled are taken and
// ignored.
type sendRequest struct {
	DestinationPhoneNumber *string           `json:"DestinationPhoneNumber"`
	OriginationIdentity    *string           `json:"OriginationIdentity"`
	MessageBody            *string           `json:"MessageBody"`
	MessageType            *string           `json:"MessageType"`
	ConfigurationSetName   *string           `json:"ConfigurationSetName"`
	MaxPrice               *string           `json:"MaxPrice"`
	TimeToLive             *int64            `json:"TimeToLive"`
	Context                map[string]string `json:"Context"`
	DryRun                 bool              `json:"DryRun"`
}

type sendResponse struct {
	MessageID string `json:"MessageId"`
}

// filter is a PhoneNumberFilter, PoolFilter or OptedOutFilter.
type filter struct {
	Name   string   `json:"Name"`
	Values []string `json:"Values"`
}

type optedOutRequest struct {
	OptOutListName  *string  `json:"OptOutListName"`
	OptedOutNumbers []string `json:"OptedOutNumbers"`
	Filters         []filter `json:"Filters"`
	NextToken       *string  `json:"NextToken"`
	MaxResults      *int64   `json:"MaxResults"`
}

type optedOutNumber struct {
	OptedOutNumber    string `json:"OptedOutNumber"`
	OptedOutTimestamp int64  `json:"OptedOutTimestamp"`
	EndUserOptedOut   bool   `json:"EndUserOptedOut"`
}

type optedOutResponse struct {
	OptOutListArn   string           `json:"OptOutListArn"`
	OptOutListName  string           `json:"OptOutListName"`
	OptedOutNumbers []optedOutNumber `json:"OptedOutNumbers"`
	NextToken       string           `json:"NextToken,omitempty"`
}

type phoneNumbersRequest struct {
	PhoneNumberIDs []string `json:"PhoneNumberIds"`
	Filters        []filter `json:"Filters"`
	Owner          *string  `json:"Owner"`
	NextToken      *string  `json:"NextToken"`
	MaxResults     *int64   `json:"MaxResults"`
}

// phoneNumberInfo is PhoneNumberInformation.
type phoneNumberInfo struct {
	PhoneNumberArn              string   `json:"PhoneNumberArn"`
	PhoneNumberID               string   `json:"PhoneNumberId"`
	PhoneNumber                 string   `json:"PhoneNumber"`
	Status                      string   `json:"Status"`
	IsoCountryCode              string   `json:"IsoCountryCode"`
	MessageType                 string   `json:"MessageType"`
	NumberCapabilities          []string `json:"NumberCapabilities"`
	NumberType                  string   `json:"NumberType"`
	MonthlyLeasingPrice         string   `json:"MonthlyLeasingPrice"`
	TwoWayEnabled               bool     `json:"TwoWayEnabled"`
	SelfManagedOptOutsEnabled   bool     `json:"SelfManagedOptOutsEnabled"`
	OptOutListName              string   `json:"OptOutListName"`
	InternationalSendingEnabled bool     `json:"InternationalSendingEnabled"`
	DeletionProtectionEnabled   bool     `json:"DeletionProtectionEnabled"`
	PoolID                      string   `json:"PoolId,omitempty"`
	CreatedTimestamp            int64    `json:"CreatedTimestamp"`
}

type phoneNumbersResponse struct {
	PhoneNumbers []phoneNumberInfo `json:"PhoneNumbers"`
	NextToken    string            `json:"NextToken,omitempty"`
}

type poolsRequest struct {
	PoolIDs    []string `json:"PoolIds"`
	Filters    []filter `json:"Filters"`
	Owner      *string  `json:"Owner"`
	NextToken  *string  `json:"NextToken"`
	MaxResults *int64   `json:"MaxResults"`
}

// poolInfo is PoolInformation.
type poolInfo struct {
	PoolArn                   string `json:"PoolArn"`
	PoolID                    string `json:"PoolId"`
	Status                    string `json:"Status"`
	MessageType               string `json:"MessageType"`
	TwoWayEnabled             bool   `json:"TwoWayEnabled"`
	SelfManagedOptOutsEnabled bool   `json:"SelfManagedOptOutsEnabled"`
	OptOutListName            string `json:"OptOutListName"`
	SharedRoutesEnabled       bool   `json:"SharedRoutesEnabled"`
	DeletionProtectionEnabled bool   `json:"DeletionProtectionEnabled"`
	CreatedTimestamp          int64  `json:"CreatedTimestamp"`
}

type poolsResponse struct {
	Pools     []poolInfo `json:"Pools"`
	NextToken string     `json:"NextToken,omitempty"`
}

// apiError is an error answer: HTTP status, X-Amzn-ErrorType and a body
// whose members the SDK's deserializer reads (__type, Message, Reason,
// ResourceType, ResourceId, Fields, RequestId, each only on the types that
// have it).
type apiError struct {
	status       int
	Type         string       `json:"__type"`
	Message      string       `json:"Message"`
	Reason       string       `json:"Reason,omitempty"`
	ResourceType string       `json:"ResourceType,omitempty"`
	ResourceID   string       `json:"ResourceId,omitempty"`
	Fields       []fieldError `json:"Fields,omitempty"`
	RequestID    string       `json:"RequestId,omitempty"`
}

// fieldError is a ValidationExceptionField.
type fieldError struct {
	Name    string `json:"Name"`
	Message string `json:"Message"`
}

// Error types. The first group are the service's own (types/errors.go); the
// others come from AWS's front end, before the operation runs.
const (
	typeAccessDenied     = "AccessDeniedException"
	typeConflict         = "ConflictException"
	typeInternal         = "InternalServerException"
	typeNotFound         = "ResourceNotFoundException"
	typeQuota            = "ServiceQuotaExceededException"
	typeThrottling       = "ThrottlingException"
	typeValidation       = "ValidationException"
	typeMissingAuth      = "MissingAuthenticationTokenException"
	typeIncompleteSig    = "IncompleteSignatureException"
	typeExpiredToken     = "ExpiredTokenException"
	typeUnknownOperation = "UnknownOperationException"
	typeSerialization    = "SerializationException"
	typeUnavailable      = "ServiceUnavailableException"
)

func newError(status int, typ, format string, args ...any) *apiError {
	return &apiError{status: status, Type: typ, Message: fmt.Sprintf(format, args...)}
}

func validation(reason, field, format string, args ...any) *apiError {
	e := newError(http.StatusBadRequest, typeValidation, format, args...)
	e.Reason = reason
	if field != "" {
		e.Fields = []fieldError{{Name: field, Message: e.Message}}
	}
	return e
}

// invalidField is the answer to a member that breaks its constraint.
func invalidField(field, value, constraint string) *apiError {
	return validation("FIELD_VALIDATION_FAILED", field,
		"1 validation error detected: Value '%s' at '%s' failed to satisfy constraint: %s", value, field, constraint)
}

func missing(field string) *apiError {
	return validation("MISSING_PARAMETER", field,
		"1 validation error detected: Value null at '%s' failed to satisfy constraint: Member must not be null", field)
}

func conflict(reason, resourceType, resourceID, format string, args ...any) *apiError {
	e := newError(http.StatusBadRequest, typeConflict, format, args...)
	e.Reason, e.ResourceType, e.ResourceID = reason, resourceType, resourceID
	return e
}

func notFound(resourceType, resourceID string) *apiError {
	e := newError(http.StatusBadRequest, typeNotFound, "The %s %s does not exist.", resourceType, resourceID)
	e.ResourceType, e.ResourceID = resourceType, resourceID
	return e
}

// writeJSON answers 200 with v.
func writeJSON(w http.ResponseWriter, requestID string, v any) {
	b, _ := json.Marshal(v)
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("X-Amzn-RequestId", requestID)
	w.Write(b)
}

// writeError answers e, typed in the header and in the body as the SDK
// resolves it (header first).
func writeError(w http.ResponseWriter, requestID string, e *apiError) {
	if e.Type == typeInternal {
		e.RequestID = requestID
	}
	b, _ := json.Marshal(e)
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("X-Amzn-RequestId", requestID)
	h.Set("X-Amzn-ErrorType", e.Type)
	w.WriteHeader(e.status)
	w.Write(b)
}
