package org.rdmashuffle.verbs;

/** One entry of a port's GID table ({@code struct ibv_gid_entry}). */
public record GidEntry(int portNumber, int index, Gid gid, GidType type, int netdevIfindex) {
}
