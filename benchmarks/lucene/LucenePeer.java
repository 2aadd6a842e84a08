// The Lucene peer of benchmarks/peers.py (benchmark only: sieve never runs Java).
//
//   java -cp LUCENE_JARS:DIR LucenePeer build CORPUS.jsonl INDEX_DIR   -> {"seconds": s, "documents": n}
//   java -cp LUCENE_JARS:DIR LucenePeer serve INDEX_DIR                -> answers JSON requests, one per line:
//        {"cmd": "count", "spec": SPEC}            -> {"count": n, "ns": t}   (the matches collected in a bitset)
//        {"cmd": "bm25", "terms": [..], "k": 10}   -> {"hits": [[id, score], ..], "ns": t}
//        {"cmd": "warm", "queries": n}             -> {"ok": true}   (JIT warm-up on the index's own terms)
//
// Documents are mapped as peers.read_corpus maps them (title; section: headings other than "(intro)"
// joined by "\n"; body: section texts joined by "\n"; date: YYYYMMDD of the first day), analysed as the
// tantivy peer analyses them (split on what is not a letter or digit, lower case, ASCII folding), and
// queries are built from the same neutral specs. "ns" is the time Lucene took inside this process
// (query built, run, and for bm25 the hits' ids read), so the pipe to Python is not counted.

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.lucene.analysis.Analyzer;
import org.apache.lucene.analysis.LowerCaseFilter;
import org.apache.lucene.analysis.TokenStream;
import org.apache.lucene.analysis.Tokenizer;
import org.apache.lucene.analysis.miscellaneous.ASCIIFoldingFilter;
import org.apache.lucene.analysis.util.CharTokenizer;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.Field;
import org.apache.lucene.document.IntPoint;
import org.apache.lucene.document.StoredField;
import org.apache.lucene.document.StringField;
import org.apache.lucene.document.TextField;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.index.LeafReaderContext;
import org.apache.lucene.index.MultiTerms;
import org.apache.lucene.index.StoredFields;
import org.apache.lucene.index.Term;
import org.apache.lucene.index.Terms;
import org.apache.lucene.index.TermsEnum;
import org.apache.lucene.search.BooleanClause.Occur;
import org.apache.lucene.search.BooleanQuery;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.MatchAllDocsQuery;
import org.apache.lucene.search.PhraseQuery;
import org.apache.lucene.search.PrefixQuery;
import org.apache.lucene.search.Query;
import org.apache.lucene.search.ScoreDoc;
import org.apache.lucene.search.ScoreMode;
import org.apache.lucene.search.SimpleCollector;
import org.apache.lucene.search.TermQuery;
import org.apache.lucene.search.TopDocs;
import org.apache.lucene.search.similarities.BM25Similarity;
import org.apache.lucene.store.FSDirectory;
import org.apache.lucene.util.BytesRef;
import org.apache.lucene.util.FixedBitSet;

public class LucenePeer {
  static final String[] FIELDS = {"title", "section", "body"};
  static final Pattern DATE = Pattern.compile("^(\\d{4})(?:-(\\d{2})(?:-(\\d{2}))?)?");
  static final ObjectMapper JSON = new ObjectMapper();

  static Analyzer analyzer() {
    return new Analyzer() {
      @Override
      protected TokenStreamComponents createComponents(String field) {
        Tokenizer source = CharTokenizer.fromTokenCharPredicate(Character::isLetterOrDigit);
        TokenStream out = new ASCIIFoldingFilter(new LowerCaseFilter(source));
        return new TokenStreamComponents(source, out);
      }
    };
  }

  static Integer dateInt(JsonNode value) {
    if (value == null || value.isNull()) return null;
    Matcher m = DATE.matcher(value.asText());
    if (!m.find()) return null;
    int y = Integer.parseInt(m.group(1));
    int mo = m.group(2) != null ? Integer.parseInt(m.group(2)) : 1;
    int d = m.group(3) != null ? Integer.parseInt(m.group(3)) : 1;
    return y * 10000 + mo * 100 + d;
  }

  static void build(String corpus, String dir) throws Exception {
    long t0 = System.nanoTime();
    IndexWriterConfig cfg = new IndexWriterConfig(analyzer());
    cfg.setRAMBufferSizeMB(1024);  // as the tantivy peer's 1 GB heap: one flush on man-sections
    cfg.setOpenMode(IndexWriterConfig.OpenMode.CREATE);
    cfg.setSimilarity(new BM25Similarity(0.9f, 0.4f));
    int n = 0;
    try (IndexWriter w = new IndexWriter(FSDirectory.open(Paths.get(dir)), cfg);
         BufferedReader in = Files.newBufferedReader(Paths.get(corpus), StandardCharsets.UTF_8)) {
      String line;
      while ((line = in.readLine()) != null) {
        if (line.isBlank()) continue;
        JsonNode rec = JSON.readTree(line);
        StringBuilder section = new StringBuilder(), body = new StringBuilder();
        JsonNode secs = rec.get("sections");
        if (secs != null && secs.isArray() && secs.size() > 0) {
          for (JsonNode s : secs) {
            String h = s.has("heading") ? s.get("heading").asText() : "(intro)";
            if (!h.equals("(intro)")) {
              if (section.length() > 0) section.append('\n');
              section.append(h);
            }
            if (body.length() > 0) body.append('\n');
            body.append(s.has("text") ? s.get("text").asText() : "");
          }
        } else {
          body.append(rec.has("text") ? rec.get("text").asText() : "");
        }
        Document doc = new Document();
        doc.add(new StringField("id", rec.get("id").asText(), Field.Store.YES));
        doc.add(new TextField("title", rec.has("title") && !rec.get("title").isNull() ? rec.get("title").asText() : "", Field.Store.NO));
        doc.add(new TextField("section", section.toString(), Field.Store.NO));
        doc.add(new TextField("body", body.toString(), Field.Store.NO));
        Integer date = dateInt(rec.get("date"));
        if (date != null) doc.add(new IntPoint("date", date));
        w.addDocument(doc);
        n++;
      }
      w.commit();
    }
    double secs = (System.nanoTime() - t0) / 1e9;
    System.out.println("{\"seconds\": " + secs + ", \"documents\": " + n + "}");
  }

  static List<String> fields(JsonNode s) {
    JsonNode f = s.get("field");
    return f == null || f.isNull() ? List.of(FIELDS) : List.of(f.asText());
  }

  static Query anyField(List<String> fields, java.util.function.Function<String, Query> make) {
    if (fields.size() == 1) return make.apply(fields.get(0));
    BooleanQuery.Builder b = new BooleanQuery.Builder();
    for (String f : fields) b.add(make.apply(f), Occur.SHOULD);
    return b.build();
  }

  static Query phrase(String field, String[] words, int[] offsets, int slop) {
    PhraseQuery.Builder b = new PhraseQuery.Builder();
    for (int i = 0; i < words.length; i++) b.add(new Term(field, words[i]), offsets[i]);
    b.setSlop(slop);
    return b.build();
  }

  static Query query(JsonNode s) {
    String op = s.get("op").asText();
    List<String> fields = fields(s);
    switch (op) {
      case "term":
        return anyField(fields, f -> new TermQuery(new Term(f, s.get("term").asText())));
      case "phrase": {
        String[] words = new String[s.get("terms").size()];
        int[] offsets = new int[words.length];
        for (int i = 0; i < words.length; i++) { words[i] = s.get("terms").get(i).asText(); offsets[i] = i; }
        if (words.length == 1) return anyField(fields, f -> new TermQuery(new Term(f, words[0])));
        return anyField(fields, f -> phrase(f, words, offsets, 0));
      }
      case "prefix":
        return anyField(fields, f -> new PrefixQuery(new Term(f, s.get("stem").asText())));
      case "near": {
        // As the tantivy peer: NEAR(a, b, n) = sloppy phrases "a b" or "b a" with slop n - 1;
        // NEAR(a, a, n) = the exact-offset phrases (0: a, k: a), k = 1..n.
        String a = s.get("a").asText(), b = s.get("b").asText();
        int n = s.get("n").asInt();
        BooleanQuery.Builder out = new BooleanQuery.Builder();
        for (String f : fields) {
          if (a.equals(b)) {
            for (int k = 1; k <= n; k++) out.add(phrase(f, new String[] {a, a}, new int[] {0, k}, 0), Occur.SHOULD);
          } else {
            out.add(phrase(f, new String[] {a, b}, new int[] {0, 1}, n - 1), Occur.SHOULD);
            out.add(phrase(f, new String[] {b, a}, new int[] {0, 1}, n - 1), Occur.SHOULD);
          }
        }
        return out.build();
      }
      case "date": {
        int lo = s.get("lo").isNull() ? Integer.MIN_VALUE : s.get("lo").asInt();
        int hi = s.get("hi").isNull() ? Integer.MAX_VALUE : s.get("hi").asInt();
        return IntPoint.newRangeQuery("date", lo, hi);
      }
      case "or": {
        BooleanQuery.Builder b = new BooleanQuery.Builder();
        for (JsonNode c : s.get("children")) b.add(query(c), Occur.SHOULD);
        return b.build();
      }
      default: {  // "and", or a bare "not" (all documents AND NOT child)
        BooleanQuery.Builder b = new BooleanQuery.Builder();
        List<JsonNode> kids = new ArrayList<>();
        if (op.equals("and")) s.get("children").forEach(kids::add); else kids.add(s);
        boolean positive = false;
        for (JsonNode c : kids) {
          if (c.get("op").asText().equals("not")) {
            b.add(query(c.get("child")), Occur.MUST_NOT);
          } else {
            b.add(query(c), Occur.MUST);
            positive = true;
          }
        }
        if (!positive) b.add(new MatchAllDocsQuery(), Occur.MUST);
        return b.build();
      }
    }
  }

  static void serve(String dir) throws Exception {
    DirectoryReader reader = DirectoryReader.open(FSDirectory.open(Paths.get(dir)));
    IndexSearcher searcher = new IndexSearcher(reader);
    searcher.setQueryCache(null);  // each query once, as the other engines run them: no result caching
    searcher.setSimilarity(new BM25Similarity(0.9f, 0.4f));
    StoredFields stored = reader.storedFields();
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    BufferedWriter out = new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8));
    String line;
    while ((line = in.readLine()) != null) {
      JsonNode req = JSON.readTree(line);
      ObjectNode res = JSON.createObjectNode();
      try {
        switch (req.get("cmd").asText()) {
          case "count": {
            long t0 = System.nanoTime();
            int c = matches(searcher, query(req.get("spec")), reader.maxDoc());
            res.put("ns", System.nanoTime() - t0);
            res.put("count", c);
            break;
          }
          case "bm25": {
            long t0 = System.nanoTime();
            BooleanQuery.Builder b = new BooleanQuery.Builder();
            for (JsonNode t : req.get("terms")) for (String f : FIELDS) b.add(new TermQuery(new Term(f, t.asText())), Occur.SHOULD);
            TopDocs top = searcher.search(b.build(), req.get("k").asInt());
            ArrayNode hits = res.putArray("hits");
            for (ScoreDoc sd : top.scoreDocs) {
              ArrayNode h = hits.addArray();
              h.add(stored.document(sd.doc).get("id"));
              h.add(sd.score);
            }
            res.put("ns", System.nanoTime() - t0);
            break;
          }
          case "warm": {
            warm(reader, searcher, req.get("queries").asInt());
            res.put("ok", true);
            break;
          }
          default:
            res.put("error", "unknown command");
        }
      } catch (Exception e) {
        res.put("error", e.toString());
      }
      out.write(JSON.writeValueAsString(res));
      out.newLine();
      out.flush();
    }
  }

  // The matching documents as a bitset, as sieve's match gives them, and their number. Not
  // IndexSearcher.count: it answers a lone term from its document frequency and a range from the
  // points' tree without visiting a document.
  static int matches(IndexSearcher searcher, Query q, int maxDoc) throws java.io.IOException {
    BitsCollector c = new BitsCollector(maxDoc);
    searcher.search(q, c);
    return c.bits.cardinality();
  }

  static final class BitsCollector extends SimpleCollector {
    final FixedBitSet bits;
    int base;

    BitsCollector(int maxDoc) { bits = new FixedBitSet(maxDoc); }

    @Override
    protected void doSetNextReader(LeafReaderContext ctx) { base = ctx.docBase; }

    @Override
    public void collect(int doc) { bits.set(base + doc); }

    @Override
    public ScoreMode scoreMode() { return ScoreMode.COMPLETE_NO_SCORES; }
  }

  // Term, phrase, prefix, Boolean and ranked queries over words of the index itself, until the JIT
  // has compiled the search paths (the other engines need no warm-up of this kind).
  static void warm(DirectoryReader reader, IndexSearcher searcher, int queries) throws Exception {
    Terms terms = MultiTerms.getTerms(reader, "body");
    List<String> words = new ArrayList<>();
    TermsEnum te = terms.iterator();
    BytesRef t;
    int i = 0;
    while ((t = te.next()) != null) if (i++ % 97 == 0) words.add(t.utf8ToString());
    Random rng = new Random(1);
    for (int q = 0; q < queries; q++) {
      String a = words.get(rng.nextInt(words.size())), b = words.get(rng.nextInt(words.size()));
      BooleanQuery.Builder any = new BooleanQuery.Builder();
      for (String f : FIELDS) any.add(new TermQuery(new Term(f, a)), Occur.SHOULD);
      Query qa = any.build();
      int n = reader.maxDoc();
      matches(searcher, qa, n);
      matches(searcher, new TermQuery(new Term("title", a)), n);
      matches(searcher, new BooleanQuery.Builder().add(qa, Occur.MUST).add(new TermQuery(new Term("body", b)), Occur.MUST_NOT).build(), n);
      matches(searcher, phrase("body", new String[] {a, b}, new int[] {0, 1}, q % 3), n);
      if (a.length() > 2) matches(searcher, new PrefixQuery(new Term("body", a.substring(0, 3))), n);
      matches(searcher, IntPoint.newRangeQuery("date", 19900101 + q, 20200101), n);
      searcher.search(qa, 10);
    }
  }

  public static void main(String[] args) throws Exception {
    if (args.length == 3 && args[0].equals("build")) build(args[1], args[2]);
    else if (args.length == 2 && args[0].equals("serve")) serve(args[1]);
    else {
      System.err.println("usage: LucenePeer build CORPUS INDEX | serve INDEX");
      System.exit(2);
    }
  }
}
