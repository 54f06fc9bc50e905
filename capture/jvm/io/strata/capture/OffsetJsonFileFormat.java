package io.strata.capture;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.LongWritable;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.io.compress.CompressionCodecFactory;
import org.apache.hadoop.mapreduce.TaskAttemptID;
import org.apache.hadoop.mapreduce.lib.input.FileSplit;
import org.apache.hadoop.mapreduce.lib.input.LineRecordReader;
import org.apache.hadoop.mapreduce.task.TaskAttemptContextImpl;
import org.apache.spark.TaskContext;
import org.apache.spark.broadcast.Broadcast;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.JoinedRow;
import org.apache.spark.sql.catalyst.json.CreateJacksonParser;
import org.apache.spark.sql.catalyst.json.JSONOptions;
import org.apache.spark.sql.catalyst.json.JSONOptionsInRead;
import org.apache.spark.sql.catalyst.json.JacksonParser;
import org.apache.spark.sql.catalyst.util.FailureSafeParser;
import org.apache.spark.sql.execution.datasources.PartitionedFile;
import org.apache.spark.sql.execution.datasources.json.JsonFileFormat;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;
import org.apache.spark.util.SerializableConfiguration;

import scala.Function1;
import scala.Function2;
import scala.collection.Iterator;
import scala.collection.immutable.Map;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;
import scala.runtime.AbstractFunction1;

/**
 * Spark's line-delimited JSON source plus one column, {@value #OFFSET}: the byte offset at which
 * each record's line starts in its file (Hadoop's {@code LineRecordReader} key; for a compressed
 * file, which is never split, the offset in the uncompressed text).
 *
 * <p>Strata's capture names a JSON input item by (file path, line offset). Unlike a row position
 * counted after the scan ({@code monotonically_increasing_id}), the offset is known for a record
 * whether or not a filter keeps it, so a filter after the read can still be pushed into the JSON
 * parser (which then skips the rest of a record as soon as the filter fails) and the ids stay the
 * same under any filter and any split of the input.
 *
 * <p>Records are parsed exactly as {@code JsonFileFormat} parses them (the same {@code JacksonParser}
 * with the pushed filters, the same {@code FailureSafeParser} for the parse mode and the corrupt
 * record column), one line at a time. The offset column must be the last column of the schema;
 * when a query does not read it, the plain JSON reader runs. {@code multiLine} and archive entries
 * ({@code spark.sql.files.archive.reader.enabled}) are not supported.
 */
public class OffsetJsonFileFormat extends JsonFileFormat {
  public static final String OFFSET = "__strata_offset";

  @Override
  public String toString() {
    return "JSON+offset";
  }

  @Override
  public boolean equals(Object other) {
    return other instanceof OffsetJsonFileFormat;
  }

  @Override
  public int hashCode() {
    return OffsetJsonFileFormat.class.hashCode();
  }

  @Override
  public boolean isSplitable(SparkSession spark, Map<String, String> options, Path path) {
    // A compressed file is read whole: its offsets then count the uncompressed text from 0.
    CompressionCodecFactory codecs = new CompressionCodecFactory(spark.sparkContext().hadoopConfiguration());
    return codecs.getCodec(path) == null && super.isSplitable(spark, options, path);
  }

  private static StructType without(StructType schema, String name) {
    List<StructField> kept = new ArrayList<>();
    for (StructField f : schema.fields()) {
      if (!f.name().equals(name)) {
        kept.add(f);
      }
    }
    return new StructType(kept.toArray(new StructField[0]));
  }

  @Override
  public Function1<PartitionedFile, Iterator<InternalRow>> buildReader(
      SparkSession spark, StructType dataSchema, StructType partitionSchema, StructType requiredSchema,
      Seq<Filter> filters, Map<String, String> options, Configuration hadoopConf) {
    StructType required = without(requiredSchema, OFFSET);
    StructType data = without(dataSchema, OFFSET);
    List<Filter> pushed = new ArrayList<>();
    for (Filter f : CollectionConverters.asJava(filters)) {
      if (!java.util.Arrays.asList(f.references()).contains(OFFSET)) {
        pushed.add(f);
      }
    }
    Seq<Filter> kept = CollectionConverters.asScala(pushed).toSeq();
    // Spark's own reader: its driver-side checks (the corrupt record column's type, a query of that
    // column alone) run here, and it reads when the offset is not asked for.
    Function1<PartitionedFile, Iterator<InternalRow>> plain =
        super.buildReader(spark, data, partitionSchema, required, kept, options, hadoopConf);
    if (required.length() == requiredSchema.length()) {
      return plain;
    }
    if (requiredSchema.fieldIndex(OFFSET) != requiredSchema.length() - 1) {
      throw new IllegalArgumentException(OFFSET + " must be the last column of the schema");
    }
    SQLConf conf = SQLConf.get();
    JSONOptionsInRead parsed = new JSONOptionsInRead(options, conf.sessionLocalTimeZone(),
        conf.columnNameOfCorruptRecord());
    if (parsed.multiLine() || parsed.archiveFormatEnabled()) {
      throw new IllegalArgumentException("the offset column needs line-delimited JSON files "
          + "(multiLine=false, spark.sql.files.archive.reader.enabled=false)");
    }
    String corrupt = parsed.columnNameOfCorruptRecord();
    Broadcast<SerializableConfiguration> hconf = SerializableConfiguration.broadcast(spark.sparkContext(), hadoopConf);
    return new Reader(hconf, without(required, corrupt), required, parsed, kept);
  }

  /** The per-file reader; serialized to the executors with the scan. */
  static final class Reader extends AbstractFunction1<PartitionedFile, Iterator<InternalRow>> implements Serializable {
    private final Broadcast<SerializableConfiguration> hconf;
    private final StructType actual;  // what the JSON parser builds (no corrupt record column)
    private final StructType required;  // what FailureSafeParser returns (may hold the corrupt record column)
    private final JSONOptions options;
    private final Seq<Filter> filters;

    Reader(Broadcast<SerializableConfiguration> hconf, StructType actual, StructType required, JSONOptions options,
           Seq<Filter> filters) {
      this.hconf = hconf;
      this.actual = actual;
      this.required = required;
      this.options = options;
      this.filters = filters;
    }

    @Override
    public Iterator<InternalRow> apply(PartitionedFile file) {
      Configuration conf = hconf.value().value();
      JacksonParser parser = new JacksonParser(actual, options, true, filters);
      scala.Option<String> encoding = options.encoding();
      Function2<com.fasterxml.jackson.core.JsonFactory, Text, com.fasterxml.jackson.core.JsonParser> create =
          encoding.isDefined()
              ? (factory, text) -> CreateJacksonParser.text(encoding.get(), factory, text)
              : (factory, text) -> CreateJacksonParser.text(factory, text);
      Function1<Text, UTF8String> literal = text -> UTF8String.fromBytes(text.getBytes(), 0, text.getLength());
      FailureSafeParser<Text> safe = new FailureSafeParser<>(
          text -> parser.parse(text, create, literal), options.parseMode(), required, options.columnNameOfCorruptRecord());
      scala.Option<byte[]> sep = options.lineSeparatorInRead();
      LineRecordReader lines = sep.isDefined() ? new LineRecordReader(sep.get()) : new LineRecordReader();
      try {
        lines.initialize(new FileSplit(file.toPath(), file.start(), file.length(), new String[0]),
            new TaskAttemptContextImpl(conf, new TaskAttemptID()));
      } catch (java.io.IOException e) {
        throw new java.io.UncheckedIOException(e);
      }
      TaskContext task = TaskContext.get();
      if (task != null) {
        task.addTaskCompletionListener(ctx -> {
          try {
            lines.close();
          } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
          }
        });
      }
      return new Rows(lines, safe);
    }
  }

  /** Every parsed record's row, joined with its line's offset. */
  static final class Rows extends scala.collection.AbstractIterator<InternalRow> {
    private final LineRecordReader lines;
    private final FailureSafeParser<Text> safe;
    private final GenericInternalRow offset = new GenericInternalRow(1);
    private final JoinedRow joined = new JoinedRow();
    private Iterator<InternalRow> current = scala.collection.Iterator$.MODULE$.empty();
    private boolean done;

    Rows(LineRecordReader lines, FailureSafeParser<Text> safe) {
      this.lines = lines;
      this.safe = safe;
    }

    @Override
    public boolean hasNext() {
      while (!current.hasNext()) {
        if (done) {
          return false;
        }
        try {
          if (!lines.nextKeyValue()) {
            done = true;
            lines.close();
            return false;
          }
          LongWritable key = lines.getCurrentKey();
          offset.setLong(0, key.get());
          current = safe.parse(lines.getCurrentValue());
        } catch (java.io.IOException e) {
          throw new java.io.UncheckedIOException(e);
        }
      }
      return true;
    }

    @Override
    public InternalRow next() {
      if (!hasNext()) {
        throw new java.util.NoSuchElementException();
      }
      return joined.apply(current.next(), offset);
    }
  }
}
