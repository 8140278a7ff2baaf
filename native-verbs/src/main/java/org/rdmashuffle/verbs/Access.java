package org.rdmashuffle.verbs;

/** {@code enum ibv_access_flags}: what a memory region or queue pair allows. */
public final class Access {
    public static final int LOCAL_WRITE = 1;
    public static final int REMOTE_WRITE = 1 << 1;
    public static final int REMOTE_READ = 1 << 2;
    public static final int REMOTE_ATOMIC = 1 << 3;
    public static final int MW_BIND = 1 << 4;
    public static final int ZERO_BASED = 1 << 5;
    /** On-demand paging: pages are faulted in by the device instead of pinned at registration. */
    public static final int ON_DEMAND = 1 << 6;
    public static final int HUGETLB = 1 << 7;
    /** {@code IBV_ACCESS_FLUSH_GLOBAL}: peers may FLUSH the region to global visibility. */
    public static final int FLUSH_GLOBAL = 1 << 8;
    /** {@code IBV_ACCESS_FLUSH_PERSISTENT}: peers may FLUSH the region to persistence. */
    public static final int FLUSH_PERSISTENT = 1 << 9;
    /** First of the optional flags: a device may ignore these ({@code IBV_ACCESS_OPTIONAL_RANGE}). */
    public static final int RELAXED_ORDERING = 1 << 20;
    /** {@code IBV_ACCESS_OPTIONAL_RANGE}: bits 20..29. */
    public static final int OPTIONAL_RANGE = ((1 << 10) - 1) << 20;

    private Access() {
    }

    public static String describe(int access) {
        StringBuilder sb = new StringBuilder();
        if ((access & LOCAL_WRITE) != 0) sb.append("LOCAL_WRITE|");
        if ((access & REMOTE_WRITE) != 0) sb.append("REMOTE_WRITE|");
        if ((access & REMOTE_READ) != 0) sb.append("REMOTE_READ|");
        if ((access & REMOTE_ATOMIC) != 0) sb.append("REMOTE_ATOMIC|");
        if ((access & MW_BIND) != 0) sb.append("MW_BIND|");
        if ((access & ZERO_BASED) != 0) sb.append("ZERO_BASED|");
        if ((access & ON_DEMAND) != 0) sb.append("ON_DEMAND|");
        if ((access & HUGETLB) != 0) sb.append("HUGETLB|");
        if ((access & FLUSH_GLOBAL) != 0) sb.append("FLUSH_GLOBAL|");
        if ((access & FLUSH_PERSISTENT) != 0) sb.append("FLUSH_PERSISTENT|");
        if ((access & RELAXED_ORDERING) != 0) sb.append("RELAXED_ORDERING|");
        return sb.isEmpty() ? "0" : sb.substring(0, sb.length() - 1);
    }
}
