"""The local web app on 127.0.0.1: the run viewer and the review page in one server
(:mod:`.server`), local and read-only outside the review API (:mod:`.security`)."""
