package io.strata.capture;

import java.util.Arrays;

import org.apache.spark.sql.Column;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.BoundReference;
import org.apache.spark.sql.catalyst.expressions.CreateNamedStruct;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.expressions.UnsafeArrayData;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.catalyst.expressions.aggregate.ImperativeAggregate;
import org.apache.spark.sql.catalyst.expressions.aggregate.TypedImperativeAggregate;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.catalyst.util.GenericArrayData;
import org.apache.spark.sql.classic.ExpressionUtils;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.Platform;

import scala.Option;
import scala.collection.immutable.IndexedSeq;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;

/**
 * {@code collect_list} for the members Strata's capture collects of an aggregation's rows
 * (capture/tracking/grouping.py {@code member}): a bare {@code bigint} id, or a struct of
 * {@code bigint}/{@code int} fields (the stored ids and positions). The result is the
 * {@code collect_list} of the same column — the same type ({@code array<...>} without null
 * elements), the same elements in the same order (rows in the order the aggregation sees them,
 * partial buffers concatenated in the order they are merged) — so stored runs read alike.
 *
 * <p>Spark's {@code collect_list} keeps each element as an object (a copied row per struct) in a
 * growable buffer and writes every buffer element by element through an unsafe projection when it
 * crosses a shuffle. This one keeps a group's members as longs in one {@code long[]} (each
 * member's fields side by side, plus a word of null flags where a field can be null), serializes
 * the buffer with one memory copy and writes the result array in Spark's {@code UnsafeArrayData}
 * layout directly.
 *
 * <p>{@link #copies} collects the elements of lists instead, each given its row's position as one
 * more {@code int} field: what {@code flatten(collect_list(transform(list, x -> struct(x.*, j))))}
 * gives, without an object per element (grouping sets' copies of groups, grouping.py
 * {@code by_groups}).
 */
public final class CollectMembers extends TypedImperativeAggregate<CollectMembers.Members>
    implements java.io.Serializable {
  private static final long serialVersionUID = 1L;

  /** A group's members: {@code width} longs per member, {@code size} longs in use. */
  public static final class Members {
    long[] data = new long[16];
    int size;

    void ensure(int more) {
      if (size + more > data.length) {
        data = Arrays.copyOf(data, Math.max(data.length * 2, size + more));
      }
    }
  }

  private final Expression child;
  private final Expression position;  // null, or an int appended to each member (child: an array of structs)
  private final String positionName;
  private final int mutableAggBufferOffset;
  private final int inputAggBufferOffset;
  // set from child (resolved or not: dataType is only asked once it is)
  private transient boolean ready;  // the fields below are set
  private transient int[] ordinals;  // the fields' input ordinals when all are bound references
  private transient boolean[] ints;  // which fields are int (the rest bigint)
  private transient boolean bare;    // the child is one bigint, not a struct
  private transient boolean nullable;  // some field can be null: one more word of null flags
  private transient int width;

  public CollectMembers(Expression child, Expression position, String positionName, int mutableAggBufferOffset,
                        int inputAggBufferOffset) {
    this.child = child;
    this.position = position;
    this.positionName = positionName;
    this.mutableAggBufferOffset = mutableAggBufferOffset;
    this.inputAggBufferOffset = inputAggBufferOffset;
  }

  /** Whether the collector holds every field of this type (grouping.py checks the same first). */
  private static boolean accepts(DataType type) {
    if (type instanceof StructType) {
      StructField[] fs = ((StructType) type).fields();
      if (fs.length == 0 || fs.length > 64) {
        return false;
      }
      for (StructField f : fs) {
        if (!f.dataType().equals(DataTypes.LongType) && !f.dataType().equals(DataTypes.IntegerType)) {
          return false;
        }
      }
      return true;
    }
    return type.equals(DataTypes.LongType);
  }

  /** The aggregate over {@code child} as a Column (the JVM side of grouping.py {@code collect_list}). */
  public static Column column(Column child) {
    return ExpressionUtils.column(
        new CollectMembers(ExpressionUtils.expression(child), null, null, 0, 0).toAggregateExpression());
  }

  /**
   * The members of arrays: {@code flatten(collect_list(transform(array, x -> struct(x.*, position AS
   * name))))} — each row's {@code array} of structs, every element given the row's {@code position}
   * as one more {@code int} field (the copies of grouping sets' groups: grouping.py {@code by_groups}).
   */
  public static Column copies(Column array, Column position, String name) {
    return ExpressionUtils.column(new CollectMembers(ExpressionUtils.expression(array),
        ExpressionUtils.expression(position), name, 0, 0).toAggregateExpression());
  }

  /** The type of what is collected of each member. */
  private DataType elementType() {
    if (position == null) {
      return child.dataType();
    }
    StructType struct = (StructType) ((ArrayType) child.dataType()).elementType();
    return struct.add(positionName, DataTypes.IntegerType, false);
  }

  private void layout() {
    if (ready) {
      return;
    }
    DataType type = elementType();
    if (!accepts(type)) {
      throw new IllegalArgumentException("strata_collect_members collects a bigint or bigint and int fields, not "
          + type.simpleString());
    }
    if (type instanceof StructType) {
      StructField[] fs = ((StructType) type).fields();
      int n = fs.length;
      int[] ords = new int[n];
      boolean[] in = new boolean[n];
      boolean bound = position == null && child instanceof CreateNamedStruct;
      boolean anyNull = false;
      for (int i = 0; i < n; i++) {
        in[i] = fs[i].dataType().equals(DataTypes.IntegerType);
        anyNull |= fs[i].nullable();
        if (bound) {
          Expression e = ((CreateNamedStruct) child).valExprs().apply(i);
          if (e instanceof BoundReference) {
            ords[i] = ((BoundReference) e).ordinal();
          } else {
            bound = false;
          }
        }
      }
      ints = in;
      nullable = anyNull;
      width = n + (anyNull ? 1 : 0);
      ordinals = bound ? ords : null;
    } else {
      bare = true;
      ints = new boolean[] {false};
      width = 1;
      ordinals = child instanceof BoundReference ? new int[] {((BoundReference) child).ordinal()} : null;
    }
    ready = true;
  }

  @Override
  public Members createAggregationBuffer() {
    return new Members();
  }

  @Override
  public Members update(Members buf, InternalRow input) {
    layout();
    if (position != null) {
      return updateCopies(buf, input);
    }
    if (bare) {
      if (ordinals != null) {
        if (!input.isNullAt(ordinals[0])) {
          buf.ensure(1);
          buf.data[buf.size++] = input.getLong(ordinals[0]);
        }
        return buf;
      }
      Object v = child.eval(input);
      if (v != null) {  // collect_list skips nulls
        buf.ensure(1);
        buf.data[buf.size++] = (Long) v;
      }
      return buf;
    }
    int n = ints.length;
    InternalRow row = input;
    if (ordinals == null) {
      row = (InternalRow) child.eval(input);
      if (row == null) {  // collect_list skips a null struct
        return buf;
      }
    }
    buf.ensure(width);
    int at = buf.size;
    long flags = put(buf.data, at, row, ordinals, n);
    if (nullable) {
      buf.data[at + n] = flags;
    }
    buf.size = at + width;
    return buf;
  }

  /**
   * Writes one member's {@code n} fields from {@code row} (field i at ordinal {@code ords[i]}, or
   * at i without {@code ords}) into {@code data} from {@code at}; returns its null flags.
   */
  private long put(long[] data, int at, InternalRow row, int[] ords, int n) {
    long flags = 0;
    for (int i = 0; i < n; i++) {
      int o = ords == null ? i : ords[i];
      if (row.isNullAt(o)) {
        flags |= 1L << i;
        data[at + i] = 0;
      } else {
        data[at + i] = ints[i] ? row.getInt(o) : row.getLong(o);
      }
    }
    return flags;
  }

  private Members updateCopies(Members buf, InternalRow input) {
    ArrayData array = (ArrayData) child.eval(input);
    Object at = position.eval(input);
    if (array == null || at == null) {
      return buf;
    }
    int pos = (Integer) at;
    int n = ints.length - 1;  // the element's fields; the position is field n
    int count = array.numElements();
    buf.ensure(count * width);
    long[] data = buf.data;
    int w = buf.size;
    for (int e = 0; e < count; e++, w += width) {
      long flags = put(data, w, array.getStruct(e, n), null, n);
      data[w + n] = pos;
      if (nullable) {
        data[w + n + 1] = flags;
      }
    }
    buf.size = w;
    return buf;
  }

  @Override
  public Members merge(Members buf, Members other) {
    buf.ensure(other.size);
    System.arraycopy(other.data, 0, buf.data, buf.size, other.size);
    buf.size += other.size;
    return buf;
  }

  @Override
  public Object eval(Members buf) {
    layout();
    if (bare) {
      return UnsafeArrayData.fromPrimitiveArray(Arrays.copyOf(buf.data, buf.size));
    }
    int n = ints.length;
    int count = buf.size / width;
    int header = UnsafeArrayData.calculateHeaderPortionInBytes(count);
    int rowBytes = UnsafeRow.calculateBitSetWidthInBytes(n) + 8 * n;
    long total = (long) header + 8L * count + (long) rowBytes * count;
    if (total > Integer.MAX_VALUE - 15) {
      throw new UnsupportedOperationException("a group's member array would exceed 2 GB (" + count + " members)");
    }
    byte[] out = new byte[(int) total];  // zeroed: no element is null, no field flag set unless written
    long base = Platform.BYTE_ARRAY_OFFSET;
    Platform.putLong(out, base, count);
    long slots = base + header;
    long rows = slots + 8L * count;
    int bits = UnsafeRow.calculateBitSetWidthInBytes(n);
    for (int m = 0, at = 0; m < count; m++, at += width) {
      long offset = rows - base + (long) m * rowBytes;
      Platform.putLong(out, slots + 8L * m, (offset << 32) | rowBytes);
      long row = base + offset;
      long flags = nullable ? buf.data[at + n] : 0;
      if (flags != 0) {
        Platform.putLong(out, row, flags);
      }
      long values = row + bits;
      for (int i = 0; i < n; i++) {
        if ((flags & (1L << i)) != 0) {
          continue;
        }
        if (ints[i]) {
          Platform.putInt(out, values + 8L * i, (int) buf.data[at + i]);
        } else {
          Platform.putLong(out, values + 8L * i, buf.data[at + i]);
        }
      }
    }
    UnsafeArrayData array = new UnsafeArrayData();
    array.pointTo(out, base, (int) total);
    return array;
  }

  @Override
  public byte[] serialize(Members buf) {
    byte[] bytes = new byte[8 * buf.size];
    Platform.copyMemory(buf.data, Platform.LONG_ARRAY_OFFSET, bytes, Platform.BYTE_ARRAY_OFFSET, 8L * buf.size);
    return bytes;
  }

  @Override
  public Members deserialize(byte[] bytes) {
    Members buf = new Members();
    int n = bytes.length / 8;
    buf.data = new long[Math.max(n, 16)];
    Platform.copyMemory(bytes, Platform.BYTE_ARRAY_OFFSET, buf.data, Platform.LONG_ARRAY_OFFSET, 8L * n);
    buf.size = n;
    return buf;
  }

  @Override
  public DataType dataType() {
    return new ArrayType(elementType(), false);
  }

  @Override
  public boolean nullable() {
    return false;
  }

  /** Like collect_list: an empty array over no rows. */
  @Override
  public Option<Literal> defaultResult() {
    return Option.apply(new Literal(new GenericArrayData(new Object[0]), dataType()));
  }

  @Override
  public String prettyName() {
    return "strata_collect_members";
  }

  @Override
  public Seq<Expression> children() {
    return CollectionConverters.asScala(position == null ? java.util.List.of(child) : java.util.List.of(child, position))
        .toList();
  }

  @Override
  public Expression withNewChildrenInternal(IndexedSeq<Expression> newChildren) {
    return new CollectMembers(newChildren.apply(0), position == null ? null : newChildren.apply(1), positionName,
        mutableAggBufferOffset, inputAggBufferOffset);
  }

  @Override
  public int mutableAggBufferOffset() {
    return mutableAggBufferOffset;
  }

  @Override
  public int inputAggBufferOffset() {
    return inputAggBufferOffset;
  }

  @Override
  public ImperativeAggregate withNewMutableAggBufferOffset(int offset) {
    return new CollectMembers(child, position, positionName, offset, inputAggBufferOffset);
  }

  @Override
  public ImperativeAggregate withNewInputAggBufferOffset(int offset) {
    return new CollectMembers(child, position, positionName, mutableAggBufferOffset, offset);
  }

  @Override
  public int productArity() {
    return 5;
  }

  @Override
  public Object productElement(int n) {
    switch (n) {
      case 0: return child;
      case 1: return position;
      case 2: return positionName;
      case 3: return mutableAggBufferOffset;
      case 4: return inputAggBufferOffset;
      default: throw new IndexOutOfBoundsException(String.valueOf(n));
    }
  }

  @Override
  public boolean canEqual(Object that) {
    return that instanceof CollectMembers;
  }

  @Override
  public boolean equals(Object o) {
    if (!(o instanceof CollectMembers)) {
      return false;
    }
    CollectMembers c = (CollectMembers) o;
    return child.equals(c.child) && java.util.Objects.equals(position, c.position)
        && java.util.Objects.equals(positionName, c.positionName) && mutableAggBufferOffset == c.mutableAggBufferOffset
        && inputAggBufferOffset == c.inputAggBufferOffset;
  }

  @Override
  public int hashCode() {
    return (java.util.Objects.hash(child, position, positionName) * 31 + mutableAggBufferOffset) * 31 + inputAggBufferOffset;
  }
}
