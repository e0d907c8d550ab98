"""Parent runs: a plan or a datagen pipeline whose steps are child runs, driven by one
driver (:mod:`assay.pipelines.parent`)."""
