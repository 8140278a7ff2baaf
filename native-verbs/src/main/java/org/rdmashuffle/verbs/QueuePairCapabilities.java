package org.rdmashuffle.verbs;

/** {@code struct ibv_qp_cap}: queue depths and per-request limits, as asked for or as granted. */
public record QueuePairCapabilities(int maxSendWr, int maxRecvWr, int maxSendSge, int maxRecvSge, int maxInlineData) {
}
