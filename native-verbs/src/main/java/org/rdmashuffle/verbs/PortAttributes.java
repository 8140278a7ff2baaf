package org.rdmashuffle.verbs;

/** What {@code ibv_query_port} reports about one port. */
public record PortAttributes(
        int portNumber,
        PortState state,
        int physicalState,
        LinkLayer linkLayer,
        Mtu maxMtu,
        Mtu activeMtu,
        int gidTableLength,
        long maxMessageSize,
        int lid,
        int activeWidth,
        int activeSpeed) {

    public boolean isActive() {
        return state == PortState.ACTIVE;
    }

    /** {@code ibv_port_phys_state}: 5 is LinkUp. */
    public String physicalStateName() {
        return switch (physicalState) {
            case 1 -> "SLEEP";
            case 2 -> "POLLING";
            case 3 -> "DISABLED";
            case 4 -> "PORT_CONFIGURATION_TRAINING";
            case 5 -> "LINK_UP";
            case 6 -> "LINK_ERROR_RECOVERY";
            case 7 -> "PHY_TEST";
            default -> "UNKNOWN(" + physicalState + ")";
        };
    }
}
