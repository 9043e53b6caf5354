/* Device plugin core (placeholder). */
int dp_placeholder_;
