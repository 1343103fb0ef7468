/*
 * TLC operator overrides for the generated module TraceLog (trace validation,
 * snapcheck.checker.tla.conform): the definitions Traces, TInit and TCut are read
 * from the binary file named by the system property "snapcheck.tracelog" (written
 * by snapcheck.checker.tla.trace_data) instead of being parsed as TLA+ text.
 * SANY's time on a long literal grows with its size (about 2 ms per event); this
 * reads a million events in about a second.
 *
 * TLC 2.15 replaces a definition of module M by the public static method of the
 * same name and arity of a class named M on its classpath. The values are read
 * once and kept.
 *
 * Format (big-endian): the magic "SNAPTLA1"; a string table (u32 count, then per
 * string u32 length and UTF-8 bytes); u32 count of definitions, each a u32
 * string index (its name) and a value. A value is a tag byte and its content:
 * 'i' i32; 's' u32 string index; 'b' u8; 't' u32 n and n values (a tuple);
 * 'r' u32 n and n pairs of a u32 field name and a value (a record); 'f' u32 n
 * and n pairs of values (a function: key, value); 'e' u32 n and n values (a
 * finite set).
 */
import java.io.BufferedInputStream;
import java.io.DataInputStream;
import java.io.FileInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;

import tlc2.value.impl.BoolValue;
import tlc2.value.impl.FcnRcdValue;
import tlc2.value.impl.IntValue;
import tlc2.value.impl.RecordValue;
import tlc2.value.impl.SetEnumValue;
import tlc2.value.impl.StringValue;
import tlc2.value.impl.TupleValue;
import tlc2.value.impl.Value;
import util.UniqueString;

public class TraceLog {
    private static Map<String, Value> defs;

    public static Value Traces() { return get("Traces"); }

    public static Value TInit() { return get("TInit"); }

    public static Value TCut() { return get("TCut"); }

    private static synchronized Value get(String name) {
        if (defs == null) {
            defs = load(System.getProperty("snapcheck.tracelog", "TraceLog.bin"));
        }
        Value v = defs.get(name);
        if (v == null) {
            throw new IllegalStateException("snapcheck: " + name + " is not in the trace data file");
        }
        return v;
    }

    private static Map<String, Value> load(String path) {
        try (DataInputStream in = new DataInputStream(new BufferedInputStream(new FileInputStream(path), 1 << 16))) {
            byte[] magic = new byte[8];
            in.readFully(magic);
            if (!"SNAPTLA1".equals(new String(magic, StandardCharsets.US_ASCII))) {
                throw new IOException("not a snapcheck trace data file");
            }
            Reader r = new Reader(in);
            int n = in.readInt();
            Map<String, Value> out = new HashMap<>();
            for (int k = 0; k < n; k++) {
                String name = r.strings[in.readInt()].toString();
                out.put(name, r.value());
            }
            return out;
        } catch (IOException e) {
            throw new IllegalStateException("snapcheck: cannot read the trace data " + path + ": " + e, e);
        }
    }

    /** The normalized field order of records with given field names, found once
     *  by TLC's own normalization and shared by all such records. */
    private static final class Shape {
        final UniqueString[] names;
        final int[] order;

        Shape(int[] ids, UniqueString[] strings) {
            UniqueString[] names = new UniqueString[ids.length];
            Value[] index = new Value[ids.length];
            for (int k = 0; k < ids.length; k++) {
                names[k] = strings[ids[k]];
                index[k] = IntValue.gen(k);
            }
            RecordValue probe = new RecordValue(names, index, false);
            probe.normalize();
            this.names = probe.names;
            this.order = new int[ids.length];
            for (int k = 0; k < ids.length; k++) order[k] = ((IntValue) probe.values[k]).val;
        }
    }

    private static final class Reader {
        final DataInputStream in;
        final UniqueString[] strings;
        final StringValue[] stringValues;
        final Map<String, Shape> shapes = new HashMap<>();

        Reader(DataInputStream in) throws IOException {
            this.in = in;
            int n = in.readInt();
            strings = new UniqueString[n];
            stringValues = new StringValue[n];
            for (int k = 0; k < n; k++) {
                byte[] b = new byte[in.readInt()];
                in.readFully(b);
                strings[k] = UniqueString.uniqueStringOf(new String(b, StandardCharsets.UTF_8));
                stringValues[k] = new StringValue(strings[k]);
            }
        }

        Value value() throws IOException {
            int tag = in.readUnsignedByte();
            switch (tag) {
                case 'i': return IntValue.gen(in.readInt());
                case 's': return stringValues[in.readInt()];
                case 'b': return in.readUnsignedByte() != 0 ? BoolValue.ValTrue : BoolValue.ValFalse;
                case 't': {
                    Value[] elems = new Value[in.readInt()];
                    for (int k = 0; k < elems.length; k++) elems[k] = value();
                    return new TupleValue(elems);
                }
                case 'r': {
                    int n = in.readInt();
                    int[] ids = new int[n];
                    Value[] vals = new Value[n];
                    StringBuilder key = new StringBuilder();
                    for (int k = 0; k < n; k++) {
                        ids[k] = in.readInt();
                        vals[k] = value();
                        key.append(ids[k]).append(',');
                    }
                    Shape shape = shapes.computeIfAbsent(key.toString(), s -> new Shape(ids, strings));
                    Value[] sorted = new Value[n];
                    for (int k = 0; k < n; k++) sorted[k] = vals[shape.order[k]];
                    return new RecordValue(shape.names, sorted, true);
                }
                case 'f': {
                    int n = in.readInt();
                    Value[] dom = new Value[n];
                    Value[] vals = new Value[n];
                    for (int k = 0; k < n; k++) {
                        dom[k] = value();
                        vals[k] = value();
                    }
                    FcnRcdValue fcn = new FcnRcdValue(dom, vals, false);
                    fcn.normalize();
                    return fcn;
                }
                case 'e': {
                    Value[] elems = new Value[in.readInt()];
                    for (int k = 0; k < elems.length; k++) elems[k] = value();
                    SetEnumValue set = new SetEnumValue(elems, false);
                    set.normalize();             // shared by TLC's workers: sorted once, here
                    return set;
                }
                default:
                    throw new IOException("unknown value tag " + tag);
            }
        }
    }
}
