package sms

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/pinpointsmsvoicev2"
)

// DefaultList is the opt-out list AWS links to identities that name no
// other, sender IDs included.
const DefaultList = "Default"

// IdentityError is an origination phone number that is not among the
// account's numbers in the client's region.
type IdentityError struct {
	Identity, Region string
}

func (e *IdentityError) Error() string {
	return fmt.Sprintf("origination identity %s is not a phone number of this account in %s", e.Identity, e.Region)
}

// Hint names the flags to check.
func (e *IdentityError) Hint() string { return hintIdentity }

// OptOutList names the opt-out list linked to an origination identity: a
// phone number given as E.164 ("+1…"), as its ID ("phone-…") or ARN, or a
// pool given as its ID ("pool-…") or ARN. Any other identity (a sender
// ID) uses DefaultList.
func (c *Client) OptOutList(ctx context.Context, identity string) (string, error) {
	switch {
	case strings.HasPrefix(identity, "+"):
		return c.numberList(ctx, identity)
	case strings.HasPrefix(identity, "phone-"), isARN(identity, "phone-number"):
		out, err := c.describePhoneNumbers(ctx, &pinpointsmsvoicev2.DescribePhoneNumbersInput{PhoneNumberIds: []string{identity}})
		if err != nil {
			return "", err
		}
		if len(out.PhoneNumbers) == 0 {
			return "", &IdentityError{Identity: identity, Region: c.region}
		}
		return listName(out.PhoneNumbers[0].OptOutListName), nil
	case strings.HasPrefix(identity, "pool-"), isARN(identity, "pool"):
		ctx, cancel := c.withTimeout(ctx)
		defer cancel()
		out, err := c.api.DescribePools(ctx, &pinpointsmsvoicev2.DescribePoolsInput{PoolIds: []string{identity}}, c.readOptions)
		if err != nil {
			return "", readError("describe pool "+identity, err)
		}
		if len(out.Pools) == 0 {
			return "", &IdentityError{Identity: identity, Region: c.region}
		}
		return listName(out.Pools[0].OptOutListName), nil
	}
	return DefaultList, nil
}

// numberList finds an E.164 number among the account's phone numbers:
// DescribePhoneNumbers takes IDs and ARNs only, and has no filter by
// number.
func (c *Client) numberList(ctx context.Context, e164 string) (string, error) {
	in := &pinpointsmsvoicev2.DescribePhoneNumbersInput{}
	for {
		out, err := c.describePhoneNumbers(ctx, in)
		if err != nil {
			return "", err
		}
		for _, p := range out.PhoneNumbers {
			if deref(p.PhoneNumber) == e164 {
				return listName(p.OptOutListName), nil
			}
		}
		next, err := nextToken(in.NextToken, out.NextToken)
		if err != nil || next == nil {
			if err == nil {
				err = &IdentityError{Identity: e164, Region: c.region}
			}
			return "", err
		}
		in.NextToken = next
	}
}

func (c *Client) describePhoneNumbers(ctx context.Context, in *pinpointsmsvoicev2.DescribePhoneNumbersInput) (*pinpointsmsvoicev2.DescribePhoneNumbersOutput, error) {
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	out, err := c.api.DescribePhoneNumbers(ctx, in, c.readOptions)
	if err != nil {
		return nil, readError("describe phone numbers", err)
	}
	return out, nil
}

// OptedOut calls fn with each phone number (E.164) on the opt-out list,
// page by page; it stops at fn's first error and returns it.
func (c *Client) OptedOut(ctx context.Context, list string, fn func(phone string) error) error {
	in := &pinpointsmsvoicev2.DescribeOptedOutNumbersInput{OptOutListName: &list}
	for {
		out, err := c.describeOptedOut(ctx, in)
		if err != nil {
			return err
		}
		for _, n := range out.OptedOutNumbers {
			if err := fn(deref(n.OptedOutNumber)); err != nil {
				return err
			}
		}
		next, err := nextToken(in.NextToken, out.NextToken)
		if err != nil || next == nil {
			return err
		}
		in.NextToken = next
	}
}

func (c *Client) describeOptedOut(ctx context.Context, in *pinpointsmsvoicev2.DescribeOptedOutNumbersInput) (*pinpointsmsvoicev2.DescribeOptedOutNumbersOutput, error) {
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	out, err := c.api.DescribeOptedOutNumbers(ctx, in, c.readOptions)
	if err != nil {
		return nil, readError("describe opted-out numbers of list "+deref(in.OptOutListName), err)
	}
	return out, nil
}

// nextToken is the page after prev: nil at the end. A token that repeats
// the last one would page forever.
func nextToken(prev, next *string) (*string, error) {
	if next == nil || *next == "" {
		return nil, nil
	}
	if prev != nil && *prev == *next {
		return nil, fmt.Errorf("AWS answered the same NextToken twice: paging stopped")
	}
	return next, nil
}

// readOptions turn the SDK's retries back on for one idempotent read.
func (c *Client) readOptions(po *pinpointsmsvoicev2.Options) { po.Retryer = c.reads }

// withTimeout bounds one read, its retries included: the client's
// timeout for each attempt.
func (c *Client) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if c.timeout <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, c.timeout*readAttempts)
}

// isARN reports whether s is an ARN of a resource of the given type, as
// arn:aws:sms-voice:us-east-1:111122223333:phone-number/phone-….
func isARN(s, resource string) bool {
	return strings.HasPrefix(s, "arn:") && strings.Contains(s, ":"+resource+"/")
}

func listName(s *string) string {
	if s == nil || *s == "" {
		return DefaultList
	}
	return *s
}
