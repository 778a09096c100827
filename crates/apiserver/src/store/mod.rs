//! Objects, resourceVersions and the event history ring.
