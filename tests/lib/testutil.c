/* Test helpers (placeholder). */
int testutil_placeholder_;
