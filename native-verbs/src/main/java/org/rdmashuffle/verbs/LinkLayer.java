package org.rdmashuffle.verbs;

/** {@code IBV_LINK_LAYER_*}: InfiniBand, or Ethernet for RoCE and iWARP. */
public enum LinkLayer {
    UNSPECIFIED, INFINIBAND, ETHERNET, UNKNOWN;

    public static LinkLayer of(int code) {
        return code >= 0 && code < UNKNOWN.ordinal() ? values()[code] : UNKNOWN;
    }
}
