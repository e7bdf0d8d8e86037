// Package events is the pure core of the events area (API area F): the event
// meta-schema, the catalogue of native event types, and validation of posted
// (external) and host-emitted (native) events. It does no I/O; the store and
// the HTTP routes are built on it.
//
// An event's type is event_type_id: three digits for native types, whose
// hundreds digit gives the category (see Categories and CATALOG.md), or a
// number of MinExternalTypeID and above for types defined by applications.
// The fake type 000 is the meta-schema (see MetaSchemaJSON), which holds every
// field an event may carry; native types use a subset (Type.Fields).
//
// ValidateExternal applies the specification's posting rules and returns a
// normalised Event whose Body a store appends to the tenant's log;
// ValidateNative does the same for events the host emits. Subpackage filter
// parses the query filter and compiles it to SQL against Body.
package events
