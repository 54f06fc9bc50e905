package io.strata.capture;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.TaskAttemptContext;
import org.apache.hadoop.mapreduce.task.TaskAttemptContextImpl;
import org.apache.spark.TaskContext;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.ProjectingInternalRow;
import org.apache.spark.sql.execution.datasources.OutputWriter;
import org.apache.spark.sql.execution.datasources.OutputWriterFactory;
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat;
import org.apache.spark.sql.execution.datasources.parquet.ParquetOutputWriter;
import org.apache.spark.sql.execution.datasources.parquet.ParquetWriteSupport;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.util.TaskFailureListener;

import scala.collection.immutable.Map;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Spark's Parquet writer that writes a captured result's two parts in one pass: the visible
 * columns to the user's output (the very files {@code df.write.parquet} would write) and the
 * hidden columns (names starting with {@value #HIDDEN}) into Strata's store, one file per task.
 *
 * <p>The store folder is the write option {@value #FOLDER}; without it this is Spark's plain
 * Parquet writer. A task writes its hidden rows, in the order it writes the visible ones, to
 * {@code <folder>/part-<partition>.zstd.parquet} (a hidden temporary name first, renamed when
 * the task's writer closes; a failed attempt removes its file, and a retry replaces it), so row i
 * of output file {@code part-N-...} and row i of hidden file {@code part-N} are the same result
 * row (capture/commit.py pairs them and checks the counts). Unlike an Arrow UDF, no row leaves
 * the JVM. The hidden file: zstd, no dictionary (the ids are random 64-bit hashes), row groups of
 * at most the options {@value #ROWS} rows and {@value #BYTES} bytes (as capture/tee.py writes
 * them), so a lookup reads a small part of it.
 */
public class SplitParquetFileFormat extends ParquetFileFormat {
  public static final String FOLDER = "strata.hidden.folder";
  public static final String ROWS = "strata.hidden.rowGroupRows";
  public static final String BYTES = "strata.hidden.rowGroupBytes";
  public static final String HIDDEN = "__strata_";

  @Override
  public String shortName() {
    return "strata-split-parquet";
  }

  @Override
  public String toString() {
    return "Parquet+hidden";
  }

  @Override
  public OutputWriterFactory prepareWrite(SparkSession spark, Job job, Map<String, String> options,
                                          StructType dataSchema) {
    scala.Option<String> folder = options.get(FOLDER);
    if (folder.isEmpty()) {
      return super.prepareWrite(spark, job, options, dataSchema);
    }
    List<StructField> vis = new ArrayList<>(), hid = new ArrayList<>();
    List<Object> visOrd = new ArrayList<>(), hidOrd = new ArrayList<>();
    StructField[] fields = dataSchema.fields();
    for (int i = 0; i < fields.length; i++) {
      boolean hidden = fields[i].name().startsWith(HIDDEN);
      (hidden ? hid : vis).add(fields[i]);
      (hidden ? hidOrd : visOrd).add(i);
    }
    StructType visible = new StructType(vis.toArray(new StructField[0]));
    StructType hiddenSchema = new StructType(hid.toArray(new StructField[0]));
    // the job's configuration describes the user's files (the visible schema, their codec)
    OutputWriterFactory plain = super.prepareWrite(spark, job, options, visible);
    long rows = Long.parseLong(options.getOrElse(ROWS, () -> "131072"));
    long bytes = Long.parseLong(options.getOrElse(BYTES, () -> "67108864"));
    return new Factory(plain, visible, hiddenSchema, toInts(visOrd), toInts(hidOrd), folder.get(), rows, bytes);
  }

  private static int[] toInts(List<Object> xs) {
    int[] out = new int[xs.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = (Integer) xs.get(i);
    }
    return out;
  }

  private static ProjectingInternalRow projection(StructType schema, int[] ordinals) {
    List<Object> ords = new ArrayList<>(ordinals.length);
    for (int o : ordinals) {
      ords.add(o);
    }
    return ProjectingInternalRow.apply(schema, CollectionConverters.asScala(ords).toSeq());
  }

  static final class Factory extends OutputWriterFactory {
    private final OutputWriterFactory plain;
    private final StructType visible;
    private final StructType hidden;
    private final int[] visOrd;
    private final int[] hidOrd;
    private final String folder;
    private final long rows;
    private final long bytes;

    Factory(OutputWriterFactory plain, StructType visible, StructType hidden, int[] visOrd, int[] hidOrd,
            String folder, long rows, long bytes) {
      this.plain = plain;
      this.visible = visible;
      this.hidden = hidden;
      this.visOrd = visOrd;
      this.hidOrd = hidOrd;
      this.folder = folder;
      this.rows = rows;
      this.bytes = bytes;
    }

    @Override
    public String getFileExtension(TaskAttemptContext context) {
      return plain.getFileExtension(context);
    }

    @Override
    public OutputWriter newInstance(String path, StructType dataSchema, TaskAttemptContext context) {
      OutputWriter out = plain.newInstance(path, visible, context);
      TaskContext task = TaskContext.get();
      int part = task.partitionId();
      Path fin = Paths.get(folder, String.format("part-%05d.zstd.parquet", part));
      Path tmp = Paths.get(folder, String.format(".part-%05d-%d.tmp", part, task.attemptNumber()));
      Configuration conf = new Configuration(context.getConfiguration());
      ParquetWriteSupport.setSchema(hidden, conf);
      conf.set("parquet.compression", "ZSTD");
      conf.setBoolean("parquet.enable.dictionary", false);
      conf.setLong("parquet.block.size", bytes);
      conf.setLong("parquet.block.row.count.limit", rows);
      // no .crc files beside the store's (the local store is read by pyarrow too)
      conf.set("fs.file.impl", "org.apache.hadoop.fs.RawLocalFileSystem");
      conf.setBoolean("fs.file.impl.disable.cache", true);
      OutputWriter side = new ParquetOutputWriter(tmp.toString(),
          new TaskAttemptContextImpl(conf, context.getTaskAttemptID()));
      Writer writer = new Writer(out, side, projection(visible, visOrd), projection(hidden, hidOrd), tmp, fin);
      task.addTaskFailureListener((TaskFailureListener) (ctx, error) -> writer.discard());
      return writer;
    }
  }

  static final class Writer extends OutputWriter {
    private final OutputWriter out;
    private final OutputWriter side;
    private final ProjectingInternalRow visible;
    private final ProjectingInternalRow hidden;
    private final Path tmp;
    private final Path fin;
    private boolean renamed;

    Writer(OutputWriter out, OutputWriter side, ProjectingInternalRow visible, ProjectingInternalRow hidden,
           Path tmp, Path fin) {
      this.out = out;
      this.side = side;
      this.visible = visible;
      this.hidden = hidden;
      this.tmp = tmp;
      this.fin = fin;
    }

    @Override
    public void write(InternalRow row) {
      visible.project(row);
      out.write(visible);
      hidden.project(row);
      side.write(hidden);
    }

    @Override
    public void close() {
      try {
        out.close();
      } finally {
        side.close();
      }
      try {
        Files.move(tmp, fin, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        renamed = true;
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }

    @Override
    public String path() {
      return out.path();
    }

    /** The task failed: none of this attempt's hidden rows stay in the store folder. */
    void discard() {
      try {
        Files.deleteIfExists(tmp);
        if (renamed) {
          Files.deleteIfExists(fin);
        }
      } catch (IOException ignored) {
        // the transaction's abort removes the staged folder; the row-count check catches the rest
      }
    }
  }
}
