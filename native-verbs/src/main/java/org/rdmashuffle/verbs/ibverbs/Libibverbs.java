package org.rdmashuffle.verbs.ibverbs;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

import org.rdmashuffle.verbs.VerbsException;

/**
 * The downcalls into libibverbs. Exported functions are looked up in {@code libibverbs.so.1}
 * (the runtime library, not the -dev symlink) and declared here by hand, because control-path
 * calls must capture errno ({@link Linker.Option#captureCallState}) which jextract's wrappers do
 * not. The data-path verbs ({@code ibv_post_send}, {@code ibv_post_recv}, {@code ibv_poll_cq},
 * {@code ibv_post_srq_recv}, {@code ibv_req_notify_cq}) are {@code static inline} in verbs.h and
 * have no symbol: {@link ContextOps} calls them through the function pointers in
 * {@code ibv_context.ops}, with the handles declared here.
 */
final class Libibverbs {
    static final String LIBRARY = "libibverbs.so.1";

    private static final Linker LINKER = Linker.nativeLinker();
    private static final StructLayout CAPTURE = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CAPTURE.varHandle(MemoryLayout.PathElement.groupElement("errno"));
    private static final Linker.Option CAPTURE_ERRNO = Linker.Option.captureCallState("errno");

    /** Set when the library could not be loaded; then every handle below is null. */
    static final String LOAD_FAILURE;
    private static final SymbolLookup LOOKUP;

    static {
        SymbolLookup lookup = null;
        String failure = null;
        try {
            lookup = SymbolLookup.libraryLookup(LIBRARY, Arena.global());
        } catch (IllegalArgumentException | IllegalCallerException e) {
            failure = LIBRARY + " could not be loaded (" + e.getMessage()
                    + "): install rdma-core's libibverbs (Debian/Ubuntu: libibverbs1 ibverbs-providers;"
                    + " RHEL: libibverbs)";
        }
        LOOKUP = lookup;
        LOAD_FAILURE = failure;
    }

    // Device list and context.
    static final Fn GET_DEVICE_LIST = fn("ibv_get_device_list", true, FunctionDescriptor.of(ADDRESS, ADDRESS));
    static final Fn FREE_DEVICE_LIST = fn("ibv_free_device_list", false, FunctionDescriptor.ofVoid(ADDRESS));
    static final Fn GET_DEVICE_NAME = fn("ibv_get_device_name", false, FunctionDescriptor.of(ADDRESS, ADDRESS));
    static final Fn GET_DEVICE_GUID = fn("ibv_get_device_guid", false, FunctionDescriptor.of(JAVA_LONG, ADDRESS));
    static final Fn OPEN_DEVICE = fn("ibv_open_device", true, FunctionDescriptor.of(ADDRESS, ADDRESS));
    static final Fn CLOSE_DEVICE = fn("ibv_close_device", true, FunctionDescriptor.of(JAVA_INT, ADDRESS));
    static final Fn QUERY_DEVICE = fn("ibv_query_device", true, FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
    /** The exported compat ibv_query_port: the fallback of verbs.h's ___ibv_query_port. */
    static final Fn QUERY_PORT_COMPAT = fn("ibv_query_port", true,
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_BYTE, ADDRESS));
    static final Fn QUERY_GID_EX = fn("_ibv_query_gid_ex", true,
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT, JAVA_LONG));
    static final Fn QUERY_GID = fn("ibv_query_gid", true,
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_BYTE, JAVA_INT, ADDRESS));
    static final Fn GET_ASYNC_EVENT = fn("ibv_get_async_event", true, FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
    static final Fn ACK_ASYNC_EVENT = fn("ibv_ack_async_event", false, FunctionDescriptor.ofVoid(ADDRESS));
    static final Fn WC_STATUS_STR = fn("ibv_wc_status_str", false, FunctionDescriptor.of(ADDRESS, JAVA_INT));

    // Protection domain and memory regions.
    static final Fn ALLOC_PD = fn("ibv_alloc_pd", true, FunctionDescriptor.of(ADDRESS, ADDRESS));
    static final Fn DEALLOC_PD = fn("ibv_dealloc_pd", true, FunctionDescriptor.of(JAVA_INT, ADDRESS));
    static final Fn REG_MR = fn("ibv_reg_mr", true, FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS, JAVA_LONG, JAVA_INT));
    static final Fn REG_MR_IOVA2 = fn("ibv_reg_mr_iova2", true,
            FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS, JAVA_LONG, JAVA_LONG, JAVA_INT));
    static final Fn DEREG_MR = fn("ibv_dereg_mr", true, FunctionDescriptor.of(JAVA_INT, ADDRESS));

    // Completion channel and queue.
    static final Fn CREATE_COMP_CHANNEL = fn("ibv_create_comp_channel", true, FunctionDescriptor.of(ADDRESS, ADDRESS));
    static final Fn DESTROY_COMP_CHANNEL = fn("ibv_destroy_comp_channel", true, FunctionDescriptor.of(JAVA_INT, ADDRESS));
    static final Fn CREATE_CQ = fn("ibv_create_cq", true,
            FunctionDescriptor.of(ADDRESS, ADDRESS, JAVA_INT, ADDRESS, ADDRESS, JAVA_INT));
    static final Fn DESTROY_CQ = fn("ibv_destroy_cq", true, FunctionDescriptor.of(JAVA_INT, ADDRESS));
    static final Fn GET_CQ_EVENT = fn("ibv_get_cq_event", true, FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS));
    static final Fn ACK_CQ_EVENTS = fn("ibv_ack_cq_events", false, FunctionDescriptor.ofVoid(ADDRESS, JAVA_INT));

    // Shared receive queue.
    static final Fn CREATE_SRQ = fn("ibv_create_srq", true, FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS));
    static final Fn MODIFY_SRQ = fn("ibv_modify_srq", true, FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_INT));
    static final Fn QUERY_SRQ = fn("ibv_query_srq", true, FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
    static final Fn DESTROY_SRQ = fn("ibv_destroy_srq", true, FunctionDescriptor.of(JAVA_INT, ADDRESS));

    // Queue pair.
    static final Fn CREATE_QP = fn("ibv_create_qp", true, FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS));
    static final Fn MODIFY_QP = fn("ibv_modify_qp", true, FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_INT));
    static final Fn QUERY_QP = fn("ibv_query_qp", true,
            FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_INT, ADDRESS));
    static final Fn DESTROY_QP = fn("ibv_destroy_qp", true, FunctionDescriptor.of(JAVA_INT, ADDRESS));
    static final Fn QP_TO_QP_EX = fn("ibv_qp_to_qp_ex", false, FunctionDescriptor.of(ADDRESS, ADDRESS));
    /** struct ibv_qp *(*create_qp_ex)(struct ibv_context *, struct ibv_qp_init_attr_ex *) in verbs_context; captures errno. */
    static final MethodHandle VCTX_CREATE_QP_EX = LINKER.downcallHandle(FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS),
            CAPTURE_ERRNO);

    /** errno as captured by a downcall made with {@code captureCallState("errno")} (this class's or {@link Libc}'s). */
    static int errno(MemorySegment captureState) {
        return (int) ERRNO.get(captureState, 0L);
    }

    /**
     * The errno of a failed call that returns 0 or an error: a positive errno (most verbs), or -1 with
     * errno set (older providers) in {@code captureState}.
     */
    static int errnoOf(int rc, MemorySegment captureState) {
        int errno = rc > 0 ? rc : errno(captureState);
        return errno != 0 ? errno : Math.abs(rc);
    }

    static MemorySegment allocateCaptureState(Arena arena) {
        return arena.allocate(CAPTURE);
    }

    // Function-pointer signatures of the inline verbs in ibv_context.ops. critical(): these calls
    // never block, so they skip the Java-to-native thread-state transition.
    private static final Linker.Option CRITICAL = Linker.Option.critical(false);
    /** int (*post_send)(struct ibv_qp *, struct ibv_send_wr *, struct ibv_send_wr **), likewise post_recv, post_srq_recv. */
    static final MethodHandle POST = LINKER.downcallHandle(FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS), CRITICAL);
    /** int (*poll_cq)(struct ibv_cq *, int, struct ibv_wc *). */
    static final MethodHandle POLL_CQ = LINKER.downcallHandle(FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, ADDRESS), CRITICAL);
    /** int (*req_notify_cq)(struct ibv_cq *, int). */
    static final MethodHandle REQ_NOTIFY_CQ = LINKER.downcallHandle(FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT), CRITICAL);
    /** int (*query_port)(struct ibv_context *, uint8_t, struct ibv_port_attr *, size_t) in verbs_context. */
    static final MethodHandle VCTX_QUERY_PORT = LINKER.downcallHandle(
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_BYTE, ADDRESS, JAVA_LONG));
    /** int (*query_device_ex)(struct ibv_context *, const struct ibv_query_device_ex_input *, struct ibv_device_attr_ex *, size_t). */
    static final MethodHandle VCTX_QUERY_DEVICE_EX = LINKER.downcallHandle(
            FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS, JAVA_LONG));

    /** verbs_context's advise_mr op (verbs.h's inline ibv_advise_mr): pd, advice, flags, sg_list, num_sge. */
    static final MethodHandle VCTX_ADVISE_MR = LINKER.downcallHandle(
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT));

    /** struct ibv_mw *(*alloc_mw)(struct ibv_pd *, enum ibv_mw_type) in ibv_context.ops; captures errno. */
    static final MethodHandle OPS_ALLOC_MW = LINKER.downcallHandle(FunctionDescriptor.of(ADDRESS, ADDRESS, JAVA_INT),
            CAPTURE_ERRNO);
    /** int (*bind_mw)(struct ibv_qp *, struct ibv_mw *, struct ibv_mw_bind *); captures errno (a provider may set it). */
    static final MethodHandle OPS_BIND_MW = LINKER.downcallHandle(FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS),
            CAPTURE_ERRNO);
    /** int (*dealloc_mw)(struct ibv_mw *). */
    static final MethodHandle OPS_DEALLOC_MW = LINKER.downcallHandle(FunctionDescriptor.of(JAVA_INT, ADDRESS));

    private Libibverbs() {
    }

    static boolean loaded() {
        return LOAD_FAILURE == null;
    }

    /** A libibverbs function: its name (for errors), its handle and whether it captures errno. */
    record Fn(String name, MethodHandle handle, boolean capturesErrno) {

        /**
         * Calls a function that returns a pointer and reports failure as NULL plus errno.
         * Control path only: boxes its arguments.
         */
        MemorySegment pointer(Object... args) {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment state = arena.allocate(CAPTURE);
                MemorySegment result = (MemorySegment) handle.invokeWithArguments(prepend(state, args));
                if (result.equals(MemorySegment.NULL)) {
                    throw new VerbsException(name, (int) ERRNO.get(state, 0L), null);
                }
                return result;
            } catch (VerbsException e) {
                throw e;
            } catch (Throwable t) {
                throw new VerbsException(name, "downcall failed: " + t);
            }
        }

        /**
         * Calls a function that returns 0 or an error: a positive errno (most verbs), or -1 with
         * errno set (older providers). Throws naming {@code what} (e.g. the state being entered).
         */
        void status(String what, Object... args) {
            int rc = rawStatus(args);
            if (rc != 0) {
                throw new VerbsException(what == null ? name : name + "(" + what + ")", rc, null);
            }
        }

        /** Like {@link #status} but returns the errno (0 on success) instead of throwing. */
        int rawStatus(Object... args) {
            try (Arena arena = Arena.ofConfined()) {
                if (!capturesErrno) {
                    return (int) handle.invokeWithArguments(args);
                }
                MemorySegment state = arena.allocate(CAPTURE);
                int rc = (int) handle.invokeWithArguments(prepend(state, args));
                return rc == 0 ? 0 : errnoOf(rc, state);
            } catch (Throwable t) {
                throw new VerbsException(name, "downcall failed: " + t);
            }
        }

        /** Calls a function without a failure convention (void, names, GUIDs). */
        Object plain(Object... args) {
            try {
                return handle.invokeWithArguments(args);
            } catch (Throwable t) {
                throw new VerbsException(name, "downcall failed: " + t);
            }
        }

        private static Object[] prepend(MemorySegment state, Object[] args) {
            List<Object> all = new ArrayList<>(args.length + 1);
            all.add(state);
            all.addAll(List.of(args));
            return all.toArray();
        }
    }

    private static Fn fn(String name, boolean capturesErrno, FunctionDescriptor descriptor) {
        if (LOOKUP == null) {
            return null;
        }
        Optional<MemorySegment> symbol = LOOKUP.find(name);
        if (symbol.isEmpty()) {
            // Only newer symbols may be missing (e.g. _ibv_query_gid_ex before rdma-core 32); callers fall back.
            return null;
        }
        MethodHandle handle = capturesErrno
                ? LINKER.downcallHandle(symbol.get(), descriptor, CAPTURE_ERRNO)
                : LINKER.downcallHandle(symbol.get(), descriptor);
        return new Fn(name, handle, capturesErrno);
    }
}
