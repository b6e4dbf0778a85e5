"""From a question to ranked hits: query planning, years asked, hybrid retrieval, relevance gates."""
