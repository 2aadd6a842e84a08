"""Text to terms: analyzers (`analyzers`), the field schema (`schema`, `fields`), the build's word
numbering (`vocabulary`) and batches of analysed documents (`batch`). The lowest engine layer.
"""
