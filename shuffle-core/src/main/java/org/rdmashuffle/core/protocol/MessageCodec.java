package org.rdmashuffle.core.protocol;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;

import com.esotericsoftware.kryo.Kryo;
import com.esotericsoftware.kryo.KryoException;
import com.esotericsoftware.kryo.Serializer;
import com.esotericsoftware.kryo.io.Input;
import com.esotericsoftware.kryo.io.Output;


/**
 * Encodes and decodes {@link Message}s with Kryo into registered receive buffers. Every message is
 * bounded ({@code maxMessageBytes}, and counts within it) and validated on the way in: a malformed,
 * oversized or unknown message is a {@link MalformedMessageException} naming what was wrong, never a
 * crash or a read outside the received bytes. Only the classes registered here can be decoded, each
 * with a hand-written serializer (records' final fields are not for reflection). Not thread-safe:
 * one codec per thread.
 *
 * <p>The messages carry no version of their own: a data connection is set up by a CONNECT on a control
 * connection that agreed one, and both ends know it. Versions 3 and 4 have three types; version 5 adds a
 * held answer (a fetch response's encoding under a type of its own) and the reducer's release of it, which
 * a server sends, and a reducer answers with, only on a connection of version 5 or later: every type is
 * encoded alike in all versions, so one codec reads them all (docs/compatibility.md).
 */
public final class MessageCodec {
    /** The most descriptors or map ids one message may carry. */
    public static final int MAX_ITEMS = 1 << 16;
    /**
     * The most bytes one block descriptor takes in a fetch response (its varints at their longest: 54),
     * and the most a response takes besides its descriptors and layouts (type, request id, counts: 14),
     * each with room to spare: what a request may ask for is sized from them, so that its answer fits.
     */
    public static final int MAX_DESCRIPTOR_BYTES = 58;
    public static final int MAX_RESPONSE_OVERHEAD_BYTES = 32;
    private static final int MAX_REASON_CHARS = 4096;

    private final int maxMessageBytes;
    private final Kryo kryo = new Kryo();
    private final byte[] scratch;
    private final Output output;
    private final Input input = new Input();

    public MessageCodec(int maxMessageBytes) {
        if (maxMessageBytes < 64) {
            throw new IllegalArgumentException("messages need at least 64 bytes: " + maxMessageBytes);
        }
        this.maxMessageBytes = maxMessageBytes;
        this.scratch = new byte[maxMessageBytes];
        this.output = new Output(scratch);
        kryo.setRegistrationRequired(true);
        kryo.setReferences(false);
        kryo.register(Message.FetchRequest.class, new FetchRequestSerializer(), FETCH_REQUEST);
        kryo.register(Message.FetchResponse.class, new FetchResponseSerializer(), FETCH_RESPONSE);
        kryo.register(Message.ErrorResponse.class, new ErrorResponseSerializer(), ERROR_RESPONSE);
        kryo.register(Message.Release.class, new ReleaseSerializer(), RELEASE);
    }

    // Our own type tag, not Kryo's class ids: Kryo pre-registers String and the primitives, and a
    // forged class id naming String would make it allocate whatever length the sender claims.
    private static final int FETCH_REQUEST = 10;
    private static final int FETCH_RESPONSE = 11;
    private static final int ERROR_RESPONSE = 12;
    /** A FetchResponse whose outputs are held until released (version 5): its encoding is a FetchResponse's. */
    private static final int HELD_FETCH_RESPONSE = 13;
    private static final int RELEASE = 14;

    private static Class<? extends Message> typeOf(int tag) {
        return switch (tag) {
            case FETCH_REQUEST -> Message.FetchRequest.class;
            case FETCH_RESPONSE -> Message.FetchResponse.class;
            case ERROR_RESPONSE -> Message.ErrorResponse.class;
            case HELD_FETCH_RESPONSE -> Message.FetchResponse.class;
            case RELEASE -> Message.Release.class;
            default -> null;
        };
    }

    private static int tagOf(Message m) {
        return switch (m) {
            case Message.FetchRequest r -> FETCH_REQUEST;
            case Message.FetchResponse r -> r.held() ? HELD_FETCH_RESPONSE : FETCH_RESPONSE;
            case Message.ErrorResponse r -> ERROR_RESPONSE;
            case Message.Release r -> RELEASE;
        };
    }

    public int maxMessageBytes() {
        return maxMessageBytes;
    }

    /**
     * The most descriptors a fetch response of at most {@code messageBytes} bytes always holds, whatever
     * their values (without layouts): a server answers at most that many blocks of a request, so the
     * answer is encodable before anything is described.
     */
    public static int descriptorsFitting(int messageBytes) {
        return Math.max(0, Math.min(MAX_ITEMS, (messageBytes - MAX_RESPONSE_OVERHEAD_BYTES) / MAX_DESCRIPTOR_BYTES));
    }

    /**
     * Writes {@code message} at the start of {@code buffer} and returns its length; refuses one over the
     * bound with an {@link IllegalArgumentException} whose text names its type and counts only (never
     * its items: a message a peer made long must not cost its length again in text).
     */
    public int encode(Message message, MemorySegment buffer) {
        int length = tryEncode(message, buffer);
        if (length < 0) {
            throw new IllegalArgumentException(summary(message) + " does not fit in " + bound(buffer)
                    + " bytes (the message size bound)");
        }
        return length;
    }

    /**
     * As {@link #encode}, -1 if {@code message} does not fit: for a caller that then sends something
     * smaller. Costs at most {@code maxMessageBytes} of writing, however many items the message has.
     */
    public int tryEncode(Message message, MemorySegment buffer) {
        int bound = bound(buffer);
        output.setBuffer(scratch, maxMessageBytes);
        try {
            output.writeByte(tagOf(message));
            kryo.writeObject(output, message);
        } catch (KryoException overflow) { // past maxMessageBytes: the scratch buffer is full
            return -1;
        }
        int length = output.position();
        if (length > bound) {
            return -1;
        }
        MemorySegment.copy(scratch, 0, buffer, ValueLayout.JAVA_BYTE, 0, length);
        return length;
    }

    private int bound(MemorySegment buffer) {
        return Math.min(maxMessageBytes, (int) Math.min(Integer.MAX_VALUE, buffer.byteSize()));
    }

    /** A message named by its type and counts: constant text, whatever it carries. */
    public static String summary(Message m) {
        return switch (m) {
            case Message.FetchRequest r -> "a fetch request of " + r.blocks().size() + " blocks";
            case Message.FetchResponse r -> "a fetch response of " + r.blocks().size() + " descriptors and "
                    + r.layouts().size() + " layouts";
            case Message.ErrorResponse r -> "an error response of " + r.reason().length() + " characters";
            case Message.Release r -> "a release of " + r.outputs().size() + " outputs";
        };
    }

    /** Reads the message in the first {@code length} bytes of {@code buffer}, validating it. */
    public Message decode(MemorySegment buffer, int length) {
        if (length <= 0 || length > maxMessageBytes || length > buffer.byteSize()) {
            throw new MalformedMessageException("message of " + length + " bytes (bound " + maxMessageBytes + ", buffer "
                    + buffer.byteSize() + ")");
        }
        MemorySegment.copy(buffer, ValueLayout.JAVA_BYTE, 0, scratch, 0, length);
        input.setBuffer(scratch, 0, length);
        Class<? extends Message> type = typeOf(scratch[0]);
        if (type == null) {
            throw new MalformedMessageException("unknown message type " + scratch[0]);
        }
        input.setPosition(1);
        Message decoded;
        try {
            decoded = kryo.readObject(input, type);
            if (scratch[0] == HELD_FETCH_RESPONSE) {
                Message.FetchResponse r = (Message.FetchResponse) decoded;
                decoded = new Message.FetchResponse(r.requestId(), r.blocks(), r.layouts(), true);
            }
        } catch (KryoException | IllegalArgumentException | IndexOutOfBoundsException | NegativeArraySizeException e) {
            throw new MalformedMessageException("undecodable message of " + length + " bytes: " + e.getMessage(), e);
        }
        if (input.position() != length) {
            throw new MalformedMessageException("message of " + length + " bytes has " + (length - input.position())
                    + " trailing bytes");
        }
        return decoded;
    }

    /** A sender-given count, bounded before anything is allocated for it: each item takes at least one byte. */
    private static int count(Input in, String what) {
        int n = in.readVarInt(true);
        if (n < 0 || n > MAX_ITEMS || n > in.limit() - in.position()) {
            throw new MalformedMessageException(what + " count " + n + " outside 0.." + Math.min(MAX_ITEMS, in.limit() - in.position()));
        }
        return n;
    }

    private static final class FetchRequestSerializer extends Serializer<Message.FetchRequest> {
        @Override
        public void write(Kryo kryo, Output out, Message.FetchRequest r) {
            out.writeVarLong(r.requestId(), true);
            out.writeVarInt(r.shuffleId(), true);
            out.writeBoolean(r.withLayouts());
            out.writeVarInt(r.blocks().size(), true);
            for (BlockId b : r.blocks()) {
                out.writeVarLong(b.mapId(), true);
                out.writeVarInt(b.startPartition(), true);
                out.writeVarInt(b.endPartition() - b.startPartition(), true);
            }
        }

        @Override
        public Message.FetchRequest read(Kryo kryo, Input in, Class<Message.FetchRequest> type) {
            long id = in.readVarLong(true);
            int shuffle = in.readVarInt(true);
            if (shuffle < 0) {
                throw new MalformedMessageException("fetch request " + id + ": shuffle " + shuffle);
            }
            boolean withLayouts = in.readBoolean();
            int n = count(in, "block");
            List<BlockId> blocks = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                long map = in.readVarLong(true);
                int start = in.readVarInt(true);
                int span = in.readVarInt(true);
                if (start < 0 || span <= 0 || start + span < 0) {
                    throw new MalformedMessageException("fetch request " + id + ": map " + map + ", partitions from " + start
                            + " spanning " + span);
                }
                blocks.add(new BlockId(shuffle, map, start, start + span));
            }
            return new Message.FetchRequest(id, shuffle, blocks, withLayouts);
        }
    }

    private static final class FetchResponseSerializer extends Serializer<Message.FetchResponse> {
        @Override
        public void write(Kryo kryo, Output out, Message.FetchResponse r) {
            out.writeVarLong(r.requestId(), true);
            out.writeVarInt(r.blocks().size(), true);
            for (BlockDescriptor b : r.blocks()) {
                out.writeVarInt(b.shuffleId(), true);
                out.writeVarLong(b.mapId(), true);
                out.writeVarInt(b.startPartition(), true);
                out.writeVarInt(b.endPartition(), true);
                out.writeLong(b.address());
                out.writeVarLong(b.length(), true);
                out.writeInt(b.rkey());
                out.writeVarLong(b.rawLength(), true);
            }
            out.writeVarInt(r.layouts().size(), true);
            for (MapOutputLayout l : r.layouts()) {
                out.writeVarInt(l.shuffleId(), true);
                out.writeVarLong(l.mapId(), true);
                out.writeLong(l.address());
                out.writeInt(l.rkey());
                out.writeVarInt(l.partitions(), true);
                for (int p = 0; p < l.partitions(); p++) {
                    out.writeVarLong(l.offsets()[p + 1] - l.offsets()[p], true);
                }
            }
        }

        @Override
        public Message.FetchResponse read(Kryo kryo, Input in, Class<Message.FetchResponse> type) {
            long id = in.readVarLong(true);
            int n = count(in, "block");
            List<BlockDescriptor> blocks = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                BlockDescriptor b = new BlockDescriptor(in.readVarInt(true), in.readVarLong(true), in.readVarInt(true),
                        in.readVarInt(true), in.readLong(), in.readVarLong(true), in.readInt(), in.readVarLong(true));
                if (b.shuffleId() < 0 || b.startPartition() < 0 || b.endPartition() <= b.startPartition() || b.length() < 0
                        || b.rawLength() < 0) {
                    throw new MalformedMessageException("fetch response " + id + ": invalid block " + b);
                }
                blocks.add(b);
            }
            int n2 = count(in, "layout");
            List<MapOutputLayout> layouts = new ArrayList<>(n2);
            for (int i = 0; i < n2; i++) {
                int shuffle = in.readVarInt(true);
                long map = in.readVarLong(true);
                long address = in.readLong();
                int rkey = in.readInt();
                int partitions = count(in, "partition");
                if (shuffle < 0 || address == 0 || partitions == 0) {
                    throw new MalformedMessageException("fetch response " + id + ": invalid layout of map " + map + " (shuffle "
                            + shuffle + ", " + partitions + " partitions)");
                }
                long[] offsets = new long[partitions + 1];
                for (int p = 0; p < partitions; p++) {
                    long length = in.readVarLong(true);
                    offsets[p + 1] = offsets[p] + length;
                    if (length < 0 || offsets[p + 1] < 0 || Long.compareUnsigned(address + offsets[p + 1], address) < 0) {
                        throw new MalformedMessageException("fetch response " + id + ": layout of map " + map
                                + ": partition " + p + " runs past the address space");
                    }
                }
                layouts.add(new MapOutputLayout(shuffle, map, address, rkey, offsets));
            }
            return new Message.FetchResponse(id, blocks, layouts);
        }
    }

    private static final class ReleaseSerializer extends Serializer<Message.Release> {
        @Override
        public void write(Kryo kryo, Output out, Message.Release r) {
            out.writeVarInt(r.outputs().size(), true);
            for (Message.Released o : r.outputs()) {
                out.writeVarInt(o.shuffleId(), true);
                out.writeVarLong(o.mapId(), true);
                out.writeVarInt(o.answers(), true);
            }
        }

        @Override
        public Message.Release read(Kryo kryo, Input in, Class<Message.Release> type) {
            int n = count(in, "released output");
            if (n == 0) {
                throw new MalformedMessageException("a release of no output");
            }
            List<Message.Released> outputs = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                int shuffle = in.readVarInt(true);
                long map = in.readVarLong(true);
                int answers = in.readVarInt(true);
                if (shuffle < 0 || answers <= 0) {
                    throw new MalformedMessageException("release: map " + map + " of shuffle " + shuffle + " for " + answers
                            + " answers");
                }
                outputs.add(new Message.Released(shuffle, map, answers));
            }
            return new Message.Release(outputs);
        }
    }

    private static final class ErrorResponseSerializer extends Serializer<Message.ErrorResponse> {
        @Override
        public void write(Kryo kryo, Output out, Message.ErrorResponse r) {
            out.writeVarLong(r.requestId(), true);
            out.writeByte(r.kind().ordinal());
            BlockId b = r.block();
            out.writeBoolean(b != null);
            if (b != null) {
                out.writeVarInt(b.shuffleId(), true);
                out.writeVarLong(b.mapId(), true);
                out.writeVarInt(b.startPartition(), true);
                out.writeVarInt(b.endPartition() - b.startPartition(), true);
            }
            String reason = r.reason().length() > MAX_REASON_CHARS ? r.reason().substring(0, MAX_REASON_CHARS) : r.reason();
            byte[] utf8 = reason.getBytes(java.nio.charset.StandardCharsets.UTF_8);
            out.writeVarInt(utf8.length, true);
            out.writeBytes(utf8);
        }

        @Override
        public Message.ErrorResponse read(Kryo kryo, Input in, Class<Message.ErrorResponse> type) {
            long id = in.readVarLong(true);
            int kind = in.readByte();
            if (kind < 0 || kind >= Message.ErrorKind.values().length) {
                throw new MalformedMessageException("error response " + id + ": unknown kind " + kind);
            }
            BlockId block = null;
            if (in.readBoolean()) {
                int shuffle = in.readVarInt(true);
                long map = in.readVarLong(true);
                int start = in.readVarInt(true);
                int span = in.readVarInt(true);
                if (shuffle < 0 || start < 0 || span <= 0 || start + span < 0) {
                    throw new MalformedMessageException("error response " + id + ": shuffle " + shuffle + ", map " + map
                            + ", partitions from " + start + " spanning " + span);
                }
                block = new BlockId(shuffle, map, start, start + span);
            }
            // Bounded before allocating: Kryo's own readString would size its buffer from the sender's length.
            int bytes = in.readVarInt(true);
            if (bytes < 0 || bytes > 4 * MAX_REASON_CHARS || bytes > in.limit() - in.position()) {
                throw new MalformedMessageException("error response " + id + ": reason of " + bytes + " bytes");
            }
            return new Message.ErrorResponse(id, Message.ErrorKind.values()[kind], block,
                    new String(in.readBytes(bytes), java.nio.charset.StandardCharsets.UTF_8));
        }
    }
}
