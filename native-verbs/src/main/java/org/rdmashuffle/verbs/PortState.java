package org.rdmashuffle.verbs;

/** {@code enum ibv_port_state}. */
public enum PortState {
    NOP, DOWN, INIT, ARMED, ACTIVE, ACTIVE_DEFER, UNKNOWN;

    public static PortState of(int code) {
        return code >= 0 && code < UNKNOWN.ordinal() ? values()[code] : UNKNOWN;
    }
}
