package org.rdmashuffle.verbs;

/** {@code enum ibv_gid_type}: what a GID table entry addresses. */
public enum GidType {
    IB, ROCE_V1, ROCE_V2, UNKNOWN;

    public static GidType of(int code) {
        return code >= 0 && code < UNKNOWN.ordinal() ? values()[code] : UNKNOWN;
    }
}
