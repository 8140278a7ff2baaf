package org.rdmashuffle.verbs;

/**
 * A verbs call failed. Carries the call that failed, the errno it reported (0 when the call
 * reports no errno) and errno's text, so an operator can read the failure without a debugger.
 */
public class VerbsException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final String call;
    private final int errno;

    public VerbsException(String call, int errno, String detail) {
        super(format(call, errno, detail));
        this.call = call;
        this.errno = errno;
    }

    public VerbsException(String call, String detail) {
        this(call, 0, detail);
    }

    /** The verbs call that failed, e.g. {@code ibv_modify_qp(RTR)}. */
    public String call() {
        return call;
    }

    /** errno as the call reported it, or 0 when the call reported none. */
    public int errno() {
        return errno;
    }

    private static String format(String call, int errno, String detail) {
        StringBuilder sb = new StringBuilder(call).append(" failed");
        if (errno != 0) {
            sb.append(": errno ").append(errno).append(' ')
              .append(Errno.name(errno)).append(" (").append(Errno.describe(errno)).append(')');
        }
        if (detail != null && !detail.isEmpty()) {
            sb.append(errno != 0 ? "; " : ": ").append(detail);
        }
        return sb.toString();
    }
}
