"""sieve inside other agent frameworks: `sieve.adapters.langchain` (a retriever and tools; extra
`langchain`) and `sieve.adapters.llama_index` (a retriever; extra `llama-index`). Each imports its
framework only when imported itself."""
