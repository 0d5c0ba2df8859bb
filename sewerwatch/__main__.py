from sewerwatch.cli import main

raise SystemExit(main())
