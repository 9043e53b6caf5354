/* Fake kubelet (placeholder). */
int fakekubelet_placeholder_;
