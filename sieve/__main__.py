from sieve.cli import main

raise SystemExit(main())
