from estimation.cli import main

raise SystemExit(main())
