package org.rdmashuffle.verbs;

/** {@code struct ibv_srq_attr}: depth, SGEs per receive, and the low-water limit (0 = disarmed). */
public record SharedReceiveQueueAttributes(int maxWr, int maxSge, int limit) {
}
